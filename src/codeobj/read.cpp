// Reading AMDGPU code objects: offload bundles, the ELF (elfutils' libelf), symbols, the kernel
// descriptors and the metadata note (metadata.cpp). Every size and offset taken from the input is
// checked against the bytes there are before it is used.
#include "codeobj/internal.hpp"
#include "rocplay/codeobj/codeobj.hpp"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace rocplay::codeobj {

namespace {

constexpr std::uint16_t kMachineAmdgpu = 224; // EM_AMDGPU
constexpr std::uint32_t kNoteAmdgpuMetadata = 32;
constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";
constexpr std::string_view kCompressedBundleMagic = "CCOB";
constexpr std::size_t kDescriptorBytes = 64;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t load_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v); // little-endian, as every AMDGPU object and bundle is
  return v;
}
std::uint32_t load_u32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}
std::uint16_t load_u16(const std::uint8_t* p) {
  std::uint16_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool starts_with(std::span<const std::uint8_t> bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

struct Section {
  std::string name;
  GElf_Shdr header{};
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

class ElfReader {
public:
  ElfReader(std::span<const std::uint8_t> bytes, std::string label, const Limits& limits,
            ReadResult& result)
      : bytes_(bytes.begin(), bytes.end()), label_(std::move(label)), limits_(limits),
        result_(result) {}

  void read();

private:
  void problem(std::string message, std::string hint) {
    result_.problems.push_back({label_ + ": " + std::move(message), std::move(hint)});
  }
  bool check_layout(const GElf_Ehdr& eh);
  void collect_sections();
  void read_symbols(CodeObject& co);
  void read_notes(CodeObject& co);
  void read_descriptors(CodeObject& co);
  std::span<const std::uint8_t> bytes_at(std::uint64_t address, std::size_t n) const;

  std::vector<std::uint8_t> bytes_; // libelf wants a mutable buffer; this copy is ours
  std::string label_;
  const Limits& limits_;
  ReadResult& result_;
  std::unique_ptr<Elf, ElfCloser> elf_;
  std::vector<Section> sections_;
  // Symbols by name: FUNC symbols (code) and OBJECT symbols ending in `.kd` (descriptors).
  std::unordered_map<std::string, Function> funcs_;
  std::unordered_map<std::string, std::uint64_t> descriptors_;
  std::vector<std::string> descriptor_order_;
};

bool ElfReader::check_layout(const GElf_Ehdr& eh) {
  const std::uint64_t size = bytes_.size();
  if (eh.e_shoff > size ||
      static_cast<std::uint64_t>(eh.e_shnum) * eh.e_shentsize > size - eh.e_shoff) {
    problem("truncated ELF: its section headers end at byte " +
                std::to_string(eh.e_shoff + std::uint64_t{eh.e_shnum} * eh.e_shentsize) +
                ", the input has " + std::to_string(size),
            "the object was cut short; save it again (rocm-debug-agent --save-code-objects, or "
            "rocgdb `dump memory` over the URI's offset and size)");
    return false;
  }
  return true;
}

void ElfReader::collect_sections() {
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_.get(), &shstrndx) != 0) {
    shstrndx = 0;
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf_.get(), scn)) != nullptr) {
    Section s;
    if (gelf_getshdr(scn, &s.header) == nullptr) {
      continue;
    }
    s.name = bounded_name(elf_strptr(elf_.get(), shstrndx, s.header.sh_name), 256);
    if (s.header.sh_type != SHT_NOBITS) {
      if (s.header.sh_offset > bytes_.size() ||
          s.header.sh_size > bytes_.size() - s.header.sh_offset) {
        result_.objects.back().warnings.push_back(
            "section " + s.name + " runs past the end of the input (truncated object); skipped");
        continue;
      }
      s.data = bytes_.data() + s.header.sh_offset;
      s.size = s.header.sh_size;
    }
    sections_.push_back(std::move(s));
  }
}

std::span<const std::uint8_t> ElfReader::bytes_at(std::uint64_t address, std::size_t n) const {
  for (const auto& s : sections_) {
    if ((s.header.sh_flags & SHF_ALLOC) == 0 || s.data == nullptr) {
      continue;
    }
    if (address >= s.header.sh_addr && address - s.header.sh_addr <= s.size &&
        n <= s.size - (address - s.header.sh_addr)) {
      return {s.data + (address - s.header.sh_addr), n};
    }
  }
  return {};
}

void ElfReader::read_symbols(CodeObject& co) {
  std::size_t total = 0;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf_.get(), scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr ||
        (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || sh.sh_entsize == 0) {
      continue;
    }
    const std::size_t count = data->d_size / sh.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      if (++total > limits_.max_symbols) {
        co.warnings.push_back("more than " + std::to_string(limits_.max_symbols) +
                              " symbols; the rest were not read");
        return;
      }
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
        continue;
      }
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_OBJECT) {
        continue;
      }
      std::string name =
          bounded_name(elf_strptr(elf_.get(), sh.sh_link, sym.st_name), limits_.max_name_bytes);
      if (name.empty()) {
        continue;
      }
      if (type == STT_FUNC) {
        funcs_.try_emplace(name, Function{name, sym.st_value, sym.st_size});
      } else if (name.size() > 3 && name.ends_with(".kd")) {
        if (descriptors_.try_emplace(name, sym.st_value).second) {
          descriptor_order_.push_back(name);
        }
      }
    }
  }
  co.functions.reserve(funcs_.size());
  for (const auto& [name, f] : funcs_) {
    co.functions.push_back(f);
  }
  std::sort(co.functions.begin(), co.functions.end(),
            [](const Function& a, const Function& b) { return a.address < b.address; });
}

void ElfReader::read_notes(CodeObject& co) {
  for (const auto& s : sections_) {
    if (s.header.sh_type != SHT_NOTE || s.data == nullptr) {
      continue;
    }
    // Notes are walked by hand: 4-byte aligned headers, name and descriptor, each bounded.
    std::size_t pos = 0;
    while (pos + 12 <= s.size) {
      const std::uint32_t namesz = load_u32(s.data + pos);
      const std::uint32_t descsz = load_u32(s.data + pos + 4);
      const std::uint32_t type = load_u32(s.data + pos + 8);
      const std::uint64_t name_pad = (std::uint64_t{namesz} + 3) & ~std::uint64_t{3};
      const std::uint64_t desc_pad = (std::uint64_t{descsz} + 3) & ~std::uint64_t{3};
      const std::uint64_t rest = s.size - pos - 12;
      if (name_pad > rest || descsz > rest - name_pad) {
        co.warnings.push_back("note section " + s.name + " is truncated at byte " +
                              std::to_string(pos) + "; later notes were not read");
        break;
      }
      const auto* name = reinterpret_cast<const char*>(s.data + pos + 12);
      const std::string_view owner(name, ::strnlen(name, namesz));
      const std::uint8_t* desc = s.data + pos + 12 + name_pad;
      if (owner == "AMDGPU" && type == kNoteAmdgpuMetadata) {
        if (descsz > limits_.max_note_bytes) {
          co.warnings.push_back("the metadata note is " + std::to_string(descsz) +
                                " bytes, over the limit of " +
                                std::to_string(limits_.max_note_bytes) + "; not read");
        } else {
          read_metadata_note({desc, descsz}, co, limits_);
        }
      }
      pos += 12 + name_pad + std::min<std::uint64_t>(desc_pad, rest - name_pad);
    }
  }
}

void ElfReader::read_descriptors(CodeObject& co) {
  // Kernels named by the metadata first; descriptor symbols the metadata did not name after.
  std::unordered_map<std::string, std::size_t> by_symbol;
  for (std::size_t i = 0; i < co.kernels.size(); ++i) {
    auto& k = co.kernels[i];
    if (k.symbol.empty()) {
      k.symbol = k.name + ".kd";
    }
    by_symbol.emplace(k.symbol, i);
  }
  for (const auto& name : descriptor_order_) {
    if (by_symbol.count(name) == 0 && co.kernels.size() < limits_.max_kernels) {
      Kernel k;
      k.symbol = name;
      k.name = name.substr(0, name.size() - 3);
      by_symbol.emplace(name, co.kernels.size());
      co.kernels.push_back(std::move(k));
    }
  }
  for (auto& k : co.kernels) {
    if (auto it = descriptors_.find(k.symbol); it != descriptors_.end()) {
      k.descriptor_address = it->second;
      const auto raw = bytes_at(it->second, kDescriptorBytes);
      if (raw.size() == kDescriptorBytes) {
        KernelDescriptor d;
        d.group_segment_fixed_size = load_u32(raw.data() + 0);
        d.private_segment_fixed_size = load_u32(raw.data() + 4);
        d.kernarg_size = load_u32(raw.data() + 8);
        d.kernel_code_entry_byte_offset = static_cast<std::int64_t>(load_u64(raw.data() + 16));
        d.compute_pgm_rsrc3 = load_u32(raw.data() + 44);
        d.compute_pgm_rsrc1 = load_u32(raw.data() + 48);
        d.compute_pgm_rsrc2 = load_u32(raw.data() + 52);
        d.kernel_code_properties = load_u16(raw.data() + 56);
        k.descriptor = d;
      } else {
        co.warnings.push_back("the kernel descriptor " + k.symbol + " at " + hex(it->second) +
                              " is not inside the object's data");
      }
    }
    if (auto it = funcs_.find(k.name); it != funcs_.end()) {
      k.code_address = it->second.address;
      k.code_size = it->second.size;
    } else if (k.descriptor && k.descriptor_address) {
      k.code_address = *k.descriptor_address +
                       static_cast<std::uint64_t>(k.descriptor->kernel_code_entry_byte_offset);
    }
  }
}

void ElfReader::read() {
  init_libelf();
  elf_.reset(elf_memory(reinterpret_cast<char*>(bytes_.data()), bytes_.size()));
  if (!elf_ || elf_kind(elf_.get()) != ELF_K_ELF) {
    problem("not an ELF file libelf can read (" + std::string(elf_errmsg(-1)) + ")",
            "pass a code object, an offload bundle, or a file saved by --save-code-objects");
    return;
  }
  GElf_Ehdr eh;
  if (gelf_getehdr(elf_.get(), &eh) == nullptr) {
    problem("truncated ELF: the header is incomplete", "save the object again");
    return;
  }
  if (eh.e_machine != kMachineAmdgpu) {
    problem("ELF for machine " + std::to_string(eh.e_machine) + ", not AMDGPU (224)",
            "pass the GPU code object: a .hsaco, an offload bundle, or an executable with one");
    return;
  }
  if (gelf_getclass(elf_.get()) != ELFCLASS64) {
    problem("a 32-bit AMDGPU ELF (R600?); only 64-bit amdgcn code objects are read",
            "pass a code object built for amdgcn-amd-amdhsa");
    return;
  }
  if (!check_layout(eh)) {
    return;
  }
  result_.objects.emplace_back();
  auto& co = result_.objects.back();
  co.label = label_;
  co.e_flags = static_cast<std::uint32_t>(eh.e_flags);
  co.abi_version = eh.e_ident[EI_ABIVERSION];
  co.arch = arch_from_e_flags(co.e_flags);
  if (co.abi_version >= 2) { // v4+: xnack and sramecc are two-bit fields
    const auto xnack = co.e_flags & 0x300;
    const auto sramecc = co.e_flags & 0xc00;
    if (xnack == 0x200 || xnack == 0x300) {
      co.xnack = xnack == 0x300;
    }
    if (sramecc == 0x800 || sramecc == 0xc00) {
      co.sramecc = sramecc == 0xc00;
    }
  }
  collect_sections();
  read_symbols(co);
  read_notes(co);
  if (co.arch.empty() && !co.target.empty()) {
    // amdgcn-amd-amdhsa--gfx90a:xnack-
    auto t = std::string_view(co.target);
    if (auto dash = t.rfind('-'); dash != std::string_view::npos) {
      t.remove_prefix(dash + 1);
    }
    co.arch = std::string(t.substr(0, t.find(':')));
  }
  read_descriptors(co);
  for (const auto& s : sections_) {
    if ((s.header.sh_flags & SHF_EXECINSTR) != 0 && s.data != nullptr) {
      co.code.push_back({s.name, s.header.sh_addr, {s.data, s.data + s.size}});
    }
  }
  if (co.kernels.empty()) {
    co.warnings.push_back("no kernels: no metadata note entries and no `.kd` symbols");
  }
}

void read_bundle(std::span<const std::uint8_t> bytes, const std::string& label,
                 const Limits& limits, ReadResult& result) {
  auto bad = [&](const std::string& what) {
    result.problems.push_back({label + ": malformed offload bundle: " + what,
                               "rebuild it, or unbundle it with clang-offload-bundler --unbundle"});
  };
  if (bytes.size() < kBundleMagic.size() + 8) {
    bad("it ends inside the header");
    return;
  }
  const std::uint64_t count = load_u64(bytes.data() + kBundleMagic.size());
  if (count > limits.max_bundle_entries) {
    bad("it claims " + std::to_string(count) + " entries (the limit is " +
        std::to_string(limits.max_bundle_entries) + ")");
    return;
  }
  std::size_t pos = kBundleMagic.size() + 8;
  std::vector<std::string> triples;
  bool any_gpu = false;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < 24) {
      bad("entry " + std::to_string(i) + " ends inside its header");
      return;
    }
    const std::uint64_t offset = load_u64(bytes.data() + pos);
    const std::uint64_t size = load_u64(bytes.data() + pos + 8);
    const std::uint64_t triple_len = load_u64(bytes.data() + pos + 16);
    pos += 24;
    if (triple_len > 4096 || triple_len > bytes.size() - pos) {
      bad("entry " + std::to_string(i) + " has a triple of " + std::to_string(triple_len) +
          " bytes");
      return;
    }
    std::string triple(reinterpret_cast<const char*>(bytes.data() + pos), triple_len);
    pos += triple_len;
    triples.push_back(triple);
    if (triple.find("amdgcn") == std::string::npos) {
      continue;
    }
    any_gpu = true;
    if (offset > bytes.size() || size > bytes.size() - offset) {
      bad("entry " + triple + " (" + std::to_string(size) + " bytes at " + std::to_string(offset) +
          ") runs past the end of the bundle (" + std::to_string(bytes.size()) + " bytes)");
      continue;
    }
    if (size == 0) {
      continue;
    }
    const std::string entry_label = label + "[" + triple + "]";
    ElfReader reader(bytes.subspan(offset, size), entry_label, limits, result);
    const auto before = result.objects.size();
    reader.read();
    if (result.objects.size() > before) {
      result.objects.back().triple = triple;
    }
  }
  if (!any_gpu) {
    std::string list;
    for (const auto& t : triples) {
      list += (list.empty() ? "" : ", ") + t;
    }
    result.problems.push_back({label + ": the offload bundle has no AMDGPU entry (entries: " +
                                   (list.empty() ? "none" : list) + ")",
                               "it was built without --offload-arch=gfx...; rebuild for the GPU"});
  }
}

} // namespace

std::string arch_from_e_flags(std::uint32_t e_flags) {
  // EF_AMDGPU_MACH_* (LLVM BinaryFormat/ELF.h; AMDGPUUsage "AMDGPU ELF Header").
  static const std::unordered_map<std::uint32_t, std::string_view> machines = {
      {0x020, "gfx600"},  {0x021, "gfx601"},  {0x022, "gfx700"},  {0x023, "gfx701"},
      {0x024, "gfx702"},  {0x025, "gfx703"},  {0x026, "gfx704"},  {0x028, "gfx801"},
      {0x029, "gfx802"},  {0x02a, "gfx803"},  {0x02b, "gfx810"},  {0x02c, "gfx900"},
      {0x02d, "gfx902"},  {0x02e, "gfx904"},  {0x02f, "gfx906"},  {0x030, "gfx908"},
      {0x031, "gfx909"},  {0x032, "gfx90c"},  {0x033, "gfx1010"}, {0x034, "gfx1011"},
      {0x035, "gfx1012"}, {0x036, "gfx1030"}, {0x037, "gfx1031"}, {0x038, "gfx1032"},
      {0x039, "gfx1033"}, {0x03a, "gfx602"},  {0x03b, "gfx705"},  {0x03c, "gfx805"},
      {0x03d, "gfx1035"}, {0x03e, "gfx1034"}, {0x03f, "gfx90a"},  {0x040, "gfx940"},
      {0x041, "gfx1100"}, {0x042, "gfx1013"}, {0x043, "gfx1150"}, {0x044, "gfx1103"},
      {0x045, "gfx1036"}, {0x046, "gfx1101"}, {0x047, "gfx1102"}, {0x048, "gfx1200"},
      {0x04a, "gfx1151"}, {0x04b, "gfx941"},  {0x04c, "gfx942"},  {0x04e, "gfx1201"},
      {0x04f, "gfx950"}};
  auto it = machines.find(e_flags & 0xff);
  return it == machines.end() ? std::string() : std::string(it->second);
}

unsigned Kernel::wavefront_size(std::string_view arch) const {
  if (metadata.wavefront_size &&
      (*metadata.wavefront_size == 32 || *metadata.wavefront_size == 64)) {
    return *metadata.wavefront_size;
  }
  if (descriptor) {
    return descriptor->wave32() ? 32 : 64;
  }
  return arch.starts_with("gfx1") ? 32 : 64;
}

const Kernel* CodeObject::find_kernel(std::string_view name) const {
  for (const auto& k : kernels) {
    if (k.name == name || k.symbol == name) {
      return &k;
    }
  }
  return nullptr;
}

const Function* CodeObject::function_at(std::uint64_t address) const {
  auto it = std::upper_bound(functions.begin(), functions.end(), address,
                             [](std::uint64_t a, const Function& f) { return a < f.address; });
  if (it == functions.begin()) {
    return nullptr;
  }
  --it;
  if (address < it->address + std::max<std::uint64_t>(it->size, 1)) {
    return &*it;
  }
  return nullptr;
}

std::span<const std::uint8_t> CodeObject::code_at(std::uint64_t address) const {
  for (const auto& s : code) {
    if (address >= s.address && address - s.address < s.bytes.size()) {
      return std::span<const std::uint8_t>(s.bytes).subspan(address - s.address);
    }
  }
  return {};
}

ReadResult read_bytes(std::span<const std::uint8_t> bytes, const std::string& label,
                      const Limits& limits) {
  ReadResult result;
  if (starts_with(bytes, kBundleMagic)) {
    read_bundle(bytes, label, limits, result);
    return result;
  }
  if (starts_with(bytes, kCompressedBundleMagic)) {
    result.problems.push_back(
        {label + ": a compressed offload bundle (CCOB, written by newer ROCm); rocplay reads "
                 "uncompressed bundles only",
         "decompress it with ROCm's `clang-offload-bundler --unbundle --type=o "
         "--targets=hipv4-amdgcn-amd-amdhsa--gfxNNN`, then pass the ELF"});
    return result;
  }
  if (starts_with(bytes, "\x7f"
                         "ELF")) {
    // A host ELF with machine != AMDGPU may embed bundles (a HIP executable's .hip_fatbin).
    const bool amdgpu = bytes.size() >= 20 && load_u16(bytes.data() + 18) == kMachineAmdgpu;
    if (!amdgpu) {
      // The magic may also occur by chance (in a string table, say): only bundles that yield
      // an object count.
      ReadResult embedded;
      std::size_t found = 0;
      auto rest = bytes;
      while (found < limits.max_embedded_bundles) {
        auto it = std::search(rest.begin(), rest.end(), kBundleMagic.begin(), kBundleMagic.end());
        if (it == rest.end()) {
          break;
        }
        const auto at = static_cast<std::size_t>(it - bytes.begin());
        read_bundle(bytes.subspan(at), label + "@" + hex(at), limits, embedded);
        ++found;
        rest = bytes.subspan(at + kBundleMagic.size());
      }
      if (!embedded.objects.empty()) {
        return embedded;
      }
    }
    ElfReader reader(bytes, label, limits, result);
    reader.read();
    return result;
  }
  std::string start;
  for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 8); ++i) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    start += buf;
  }
  result.problems.push_back(
      {label + ": not a code object: neither ELF nor a clang offload bundle" +
           (bytes.empty() ? std::string(" (the input is empty)") : " (starts with " + start + ")"),
       "pass a .hsaco/.co file, an offload bundle, or a file saved by --save-code-objects"});
  return result;
}

std::optional<std::size_t> symbol_index(std::span<const std::uint8_t> elf, std::string_view name) {
  init_libelf();
  // libelf reads, never writes, an image opened with elf_memory.
  std::unique_ptr<Elf, ElfCloser> e(
      elf_memory(const_cast<char*>(reinterpret_cast<const char*>(elf.data())), elf.size()));
  if (!e || elf_kind(e.get()) != ELF_K_ELF) {
    return std::nullopt;
  }
  for (Elf_Scn* scn = elf_nextscn(e.get(), nullptr); scn != nullptr;
       scn = elf_nextscn(e.get(), scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) {
      continue;
    }
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) {
      continue;
    }
    const std::size_t count = data->d_size / sh.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) != nullptr &&
          bounded_name(elf_strptr(e.get(), sh.sh_link, sym.st_name), 4096) == name) {
        return i;
      }
    }
  }
  return std::nullopt;
}

} // namespace rocplay::codeobj
