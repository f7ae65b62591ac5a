#include "session/light_sysroot.hpp"

#include "rocplay/core/debugger.hpp"
#include "rocplay/core/temp_dir.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <system_error>

namespace rocplay::session {

namespace {

namespace fs = std::filesystem;

// Site-packages directories hold thousands of entries; a sysroot needing more links than this is
// not worth its making.
constexpr std::size_t kMostLinks = 200'000;

class Builder {
public:
  explicit Builder(std::string root) : root_(std::move(root)) {}

  // Makes ROOT/DIR a real directory holding a link for each entry of DIR (a canonical path).
  bool mirror_directory(const fs::path& dir, std::string& why) {
    if (done_.count(dir.string()) != 0) {
      return true;
    }
    if (dir != dir.root_path() && !mirror_directory(dir.parent_path(), why)) {
      return false;
    }
    std::error_code ec;
    const fs::path mirrored = inside(dir);
    if (fs::is_symlink(fs::symlink_status(mirrored, ec))) {
      fs::remove(mirrored, ec); // the link its parent's mirroring made
    }
    fs::create_directory(mirrored, ec);
    if (ec) {
      why = fmt::format("cannot create {} ({})", mirrored.string(), ec.message());
      return false;
    }
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (++links_ > kMostLinks) {
        why = fmt::format("more than {} entries to link", kMostLinks);
        return false;
      }
      const fs::path link = mirrored / entry.path().filename();
      std::error_code link_ec;
      if (fs::symlink_status(link, link_ec).type() != fs::file_type::not_found) {
        continue; // a directory mirrored before
      }
      if (entry.is_symlink(link_ec)) {
        const fs::path target = fs::read_symlink(entry.path(), link_ec);
        if (!link_ec) {
          fs::create_symlink(target.is_absolute() ? inside(target) : target, link, link_ec);
        }
      } else {
        fs::create_symlink(entry.path(), link, link_ec);
      }
    }
    if (ec) {
      why = fmt::format("cannot list {} ({})", dir.string(), ec.message());
      return false;
    }
    done_.insert(dir.string());
    return true;
  }

  bool put_light_copy(const std::string& library, const std::string& copy, std::string& why) {
    std::error_code ec;
    const fs::path real = fs::canonical(library, ec);
    if (ec) {
      return true; // gone since /proc showed it mapped: there is nothing to read
    }
    if (!mirror_directory(real.parent_path(), why)) {
      return false;
    }
    const fs::path leaf = inside(real);
    fs::remove(leaf, ec);
    fs::create_symlink(copy, leaf, ec);
    if (ec) {
      why = fmt::format("cannot link {} ({})", leaf.string(), ec.message());
      return false;
    }
    return true;
  }

private:
  fs::path inside(const fs::path& absolute) const { return fs::path(root_ + absolute.string()); }

  std::string root_;
  std::set<std::string> done_;
  std::size_t links_ = 0;
};

} // namespace

std::optional<LightSysroot>
LightSysroot::make(const std::vector<std::pair<std::string, std::string>>& light_copies,
                   std::string& why) {
  auto dir = make_private_temp_dir(kLightSysrootPrefix, why);
  if (!dir) {
    return std::nullopt;
  }
  LightSysroot sysroot(std::move(*dir)); // removed again if it is not finished
  Builder builder(sysroot.root());
  if (!builder.mirror_directory("/", why)) {
    return std::nullopt;
  }
  for (const auto& [library, copy] : light_copies) {
    if (!builder.put_light_copy(library, copy, why)) {
      return std::nullopt;
    }
  }
  return sysroot;
}

LightSysroot::LightSysroot(LightSysroot&& other) noexcept : root_(std::move(other.root_)) {
  other.root_.clear();
}

LightSysroot& LightSysroot::operator=(LightSysroot&& other) noexcept {
  if (this != &other) {
    LightSysroot gone(std::move(*this));
    root_ = std::move(other.root_);
    other.root_.clear();
  }
  return *this;
}

LightSysroot::~LightSysroot() {
  if (!root_.empty()) {
    std::error_code ignored;
    fs::remove_all(root_, ignored); // links are removed, never followed
  }
}

} // namespace rocplay::session
