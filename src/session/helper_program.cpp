// Helper programs with a bound on time and output (see rocplay/session/helper_program.hpp).
// Boost.Process v2 on std::filesystem (no Boost.Filesystem library to link). Boost 1.81 forgets
// a few includes in that mode; they come first.
#define BOOST_PROCESS_USE_STD_FS 1
#include <boost/optional.hpp>
#include <boost/type_traits/decay.hpp>
#include <boost/type_traits/is_convertible.hpp>

#include "rocplay/session/helper_program.hpp"

#include <boost/asio/connect_pipe.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>

#include "session/child_descriptors.hpp"

#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>

namespace rocplay::session {

namespace asio = boost::asio;
namespace bp2 = boost::process::v2;

ProgramRun run_program(const std::string& path, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout, std::size_t max_output,
                       Stderr stderr_output, std::chrono::milliseconds term_grace,
                       const std::atomic<bool>* cancel) {
  ProgramRun run;
  try {
    asio::io_context ctx;
    asio::readable_pipe out(ctx);
    asio::writable_pipe child_end(ctx);
    asio::connect_pipe(out, child_end);
    asio::readable_pipe err(ctx);
    asio::writable_pipe err_child_end(ctx);
    if (stderr_output == Stderr::Apart) {
      asio::connect_pipe(err, err_child_end);
    }
    // One pipe for both streams, so their lines stay in the order they were written.
    auto launch = [&] {
      if (stderr_output == Stderr::Merge) {
        return bp2::process(ctx, path, args, bp2::process_stdio{nullptr, child_end, child_end},
                            detail::OnlyStdio{});
      }
      if (stderr_output == Stderr::Apart) {
        return bp2::process(ctx, path, args, bp2::process_stdio{nullptr, child_end, err_child_end},
                            detail::OnlyStdio{});
      }
      return bp2::process(ctx, path, args, bp2::process_stdio{nullptr, child_end, nullptr},
                          detail::OnlyStdio{});
    };
    bp2::process proc = launch();
    child_end.close(); // the child holds its copies; EOF comes when it exits
    if (stderr_output == Stderr::Apart) {
      err_child_end.close();
    }
    std::array<char, 65536> buf{};
    std::array<char, 4096> err_buf{};
    bool out_eof = false;
    bool err_eof = stderr_output != Stderr::Apart;
    bool eof = false;
    std::function<void()> read_more = [&] {
      out.async_read_some(asio::buffer(buf), [&](boost::system::error_code ec, std::size_t n) {
        if (ec) {
          out_eof = true;
          eof = out_eof && err_eof;
          return;
        }
        const std::size_t room = max_output - std::min(max_output, run.output.size());
        run.output.append(buf.data(), std::min(n, room));
        run.truncated |= n > room;
        read_more();
      });
    };
    std::function<void()> read_errors = [&] {
      err.async_read_some(asio::buffer(err_buf), [&](boost::system::error_code ec, std::size_t n) {
        if (ec) {
          err_eof = true;
          eof = out_eof && err_eof;
          return;
        }
        const std::size_t room = max_output - std::min(max_output, run.errors.size());
        run.errors.append(err_buf.data(), std::min(n, room));
        read_errors();
      });
    };
    read_more();
    if (stderr_output == Stderr::Apart) {
      read_errors();
    }
    const auto cancelled = [cancel] { return cancel != nullptr && cancel->load(); };
    const auto read_until = [&](std::chrono::steady_clock::time_point deadline) {
      while (!eof && !cancelled() && std::chrono::steady_clock::now() < deadline) {
        ctx.run_one_until(cancel == nullptr
                              ? deadline
                              : std::min(deadline, std::chrono::steady_clock::now() +
                                                       std::chrono::milliseconds(20)));
        if (ctx.stopped()) {
          ctx.restart();
        }
      }
    };
    read_until(std::chrono::steady_clock::now() + timeout);
    boost::system::error_code ec;
    if (!eof && cancelled()) {
      run.error = "cancelled";
      proc.terminate(ec);
      return run;
    }
    if (!eof && term_grace.count() > 0) {
      run.timed_out = true;
      ::kill(static_cast<pid_t>(proc.id()), SIGTERM);
      read_until(std::chrono::steady_clock::now() + term_grace);
    }
    if (!eof) {
      run.timed_out = true;
      proc.terminate(ec);
      return run;
    }
    const int code = proc.wait(ec);
    if (!ec) {
      run.exit_code = code;
    }
    // Reaped: the pid is free for reuse, so Boost's destructor must not waitpid()/kill it.
    [[maybe_unused]] auto handle = proc.detach();
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::vector<std::string> split_path_var(std::string_view path_var) {
  std::vector<std::string> dirs;
  std::size_t pos = 0;
  while (pos <= path_var.size()) {
    std::size_t end = path_var.find(':', pos);
    if (end == std::string_view::npos) {
      end = path_var.size();
    }
    std::string dir(path_var.substr(pos, end - pos));
    dirs.push_back(dir.empty() ? "." : dir);
    pos = end + 1;
  }
  return dirs;
}

std::optional<std::string> find_program(std::string_view name,
                                        const std::vector<std::string>& dirs_first) {
  std::vector<std::string> dirs = dirs_first;
  if (const char* path = std::getenv("PATH")) {
    auto more = split_path_var(path);
    dirs.insert(dirs.end(), more.begin(), more.end());
  }
  for (const auto& dir : dirs) {
    std::string candidate = dir + "/" + std::string(name);
    if (is_executable_file(candidate)) {
      return candidate;
    }
  }
  return std::nullopt;
}

} // namespace rocplay::session
