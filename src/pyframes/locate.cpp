// Finding _PyRuntime in a live process (include/rocplay/pyframes/pyframes.hpp): the python
// executable or libpython among the files /proc/PID/maps lists, its ELF symbol table (.symtab, else
// .dynsym), and the load bias of its lowest mapping. Reading another process's memory.
#include "rocplay/pyframes/pyframes.hpp"

#include "rocplay/core/mapped_objects.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <string_view>

namespace rocplay::pyframes {

namespace {

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// `python3.11`, `libpython3.12.so.1.0`, `python3.13d` -> (3, 11); else (0, 0).
std::pair<int, int> version_of_name(std::string_view name, bool& is_library) {
  is_library = name.starts_with("libpython");
  std::string_view rest;
  if (is_library) {
    rest = name.substr(9);
  } else if (name.starts_with("python")) {
    rest = name.substr(6);
  } else {
    return {0, 0};
  }
  int major = 0, minor = 0;
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), major);
  if (r.ec != std::errc() || r.ptr == rest.data() + rest.size() || *r.ptr != '.') {
    return {0, 0};
  }
  const auto r2 = std::from_chars(r.ptr + 1, rest.data() + rest.size(), minor);
  if (r2.ec != std::errc()) {
    return {0, 0};
  }
  return {major, minor};
}

struct Symbols {
  std::optional<std::uint64_t> runtime, version;
  bool pie = false;
  std::optional<std::uint64_t> first_load; // lowest PT_LOAD p_vaddr, page aligned
};

std::optional<Symbols> elf_symbols(const std::string& path) {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  Symbols s;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  bool ok = false;
  if (elf != nullptr && elf_kind(elf) == ELF_K_ELF) {
    GElf_Ehdr eh;
    if (gelf_getehdr(elf, &eh) != nullptr) {
      ok = true;
      s.pie = eh.e_type == ET_DYN;
      std::size_t nph = 0;
      if (elf_getphdrnum(elf, &nph) == 0) {
        for (std::size_t i = 0; i < nph && i < 4096; ++i) {
          GElf_Phdr ph;
          if (gelf_getphdr(elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
            const std::uint64_t v = ph.p_vaddr & ~std::uint64_t{0xFFF};
            s.first_load = s.first_load ? std::min(*s.first_load, v) : v;
          }
        }
      }
      // .dynsym first (small, and _PyRuntime and Py_Version are exported), .symtab when not there.
      for (const Elf64_Word type : {SHT_DYNSYM, SHT_SYMTAB}) {
        Elf_Scn* scn = nullptr;
        while ((scn = elf_nextscn(elf, scn)) != nullptr && !(s.runtime && s.version)) {
          GElf_Shdr sh;
          if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != type || sh.sh_entsize == 0) {
            continue;
          }
          Elf_Data* data = elf_getdata(scn, nullptr);
          if (data == nullptr) {
            continue;
          }
          const std::size_t count = std::min<std::size_t>(sh.sh_size / sh.sh_entsize, 10'000'000);
          for (std::size_t i = 0; i < count; ++i) {
            GElf_Sym sym;
            if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_value == 0 ||
                sym.st_shndx == SHN_UNDEF) {
              continue;
            }
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name == nullptr || (name[0] != '_' && name[0] != 'P')) {
              continue;
            }
            if (std::strcmp(name, "_PyRuntime") == 0) {
              s.runtime = sym.st_value;
            } else if (std::strcmp(name, "Py_Version") == 0) {
              s.version = sym.st_value;
            }
          }
        }
        if (s.runtime) {
          break;
        }
      }
    }
  }
  if (elf != nullptr) {
    elf_end(elf);
  }
  ::close(fd);
  if (!ok) {
    return std::nullopt;
  }
  return s;
}

} // namespace

std::optional<Runtime> locate(int pid, std::string* why) {
  const auto maps =
      process::read_mapped_objects(pid).value_or(std::vector<process::MappedObject>{});
  // Candidates: libpython first (the runtime lives there when it is shared), then the python
  // executable, then the main executable whatever its name (an embedding program).
  std::vector<std::pair<std::string, std::pair<int, int>>> candidates;
  auto add = [&](const std::string& path, std::pair<int, int> v) {
    for (const auto& c : candidates) {
      if (c.first == path) {
        return;
      }
    }
    candidates.emplace_back(path, v);
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& m : maps) {
      bool lib = false;
      const auto v = version_of_name(base_name(m.path), lib);
      if (v.first == 3 && lib == (pass == 0)) {
        add(m.path, v);
      }
    }
  }
  if (!maps.empty()) {
    add(maps.front().path, {0, 0});
  }
  for (const auto& [path, v] : candidates) {
    // The target's own view of the file first (a container's root), then ours.
    std::optional<Symbols> syms = elf_symbols("/proc/" + std::to_string(pid) + "/root" + path);
    if (!syms) {
      syms = elf_symbols(path);
    }
    if (!syms || !syms->runtime) {
      continue;
    }
    std::uint64_t bias = 0;
    if (syms->pie) {
      const std::string& file = path; // clang before 16 cannot capture a structured binding
      const auto object = std::find_if(
          maps.begin(), maps.end(), [&](const auto& m) { return m.path == file && m.base != 0; });
      if (object == maps.end()) {
        continue;
      }
      bias = object->base - syms->first_load.value_or(0);
    }
    Runtime r;
    r.address = *syms->runtime + bias;
    if (syms->version) {
      r.py_version = *syms->version + bias;
    }
    r.object = path;
    r.major = v.first;
    r.minor = v.second;
    return r;
  }
  if (why != nullptr) {
    *why = candidates.empty() ? "no python executable or libpython is mapped"
                              : "no _PyRuntime symbol in " + candidates.front().first;
  }
  return std::nullopt;
}

} // namespace rocplay::pyframes
