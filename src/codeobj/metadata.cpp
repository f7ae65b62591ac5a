// The NT_AMDGPU_METADATA note: a msgpack map (`amdhsa.version`, `amdhsa.target`,
// `amdhsa.kernels`), decoded with msgpuck. msgpuck's own mp_check counts pending elements in an
// int and trusts every length, so the note is first validated here: every length and count is
// checked against the bytes left before anything is decoded, without recursion.
#include "codeobj/internal.hpp"

#include <msgpuck.h>

#include <limits>
#include <string_view>

namespace rocplay::codeobj {

namespace {

// True when [cur, end) holds exactly one well-formed msgpack value (and maybe trailing bytes),
// with no length or count that points past the end.
bool validate(const char* cur, const char* end) {
  std::uint64_t pending = 1;
  while (pending > 0) {
    if (cur >= end) {
      return false;
    }
    --pending;
    const auto left = static_cast<std::uint64_t>(end - cur);
    switch (mp_typeof(*cur)) {
    case MP_NIL:
      if (mp_check_nil(cur, end) > 0) {
        return false;
      }
      mp_decode_nil(&cur);
      break;
    case MP_BOOL:
      if (mp_check_bool(cur, end) > 0) {
        return false;
      }
      mp_decode_bool(&cur);
      break;
    case MP_UINT:
      if (mp_check_uint(cur, end) > 0) {
        return false;
      }
      mp_decode_uint(&cur);
      break;
    case MP_INT:
      if (mp_check_int(cur, end) > 0) {
        return false;
      }
      mp_decode_int(&cur);
      break;
    case MP_FLOAT:
      if (mp_check_float(cur, end) > 0) {
        return false;
      }
      mp_decode_float(&cur);
      break;
    case MP_DOUBLE:
      if (mp_check_double(cur, end) > 0) {
        return false;
      }
      mp_decode_double(&cur);
      break;
    case MP_STR: {
      if (mp_check_strl(cur, end) > 0) {
        return false;
      }
      const std::uint32_t n = mp_decode_strl(&cur);
      if (n > static_cast<std::uint64_t>(end - cur)) {
        return false;
      }
      cur += n;
      break;
    }
    case MP_BIN: {
      if (mp_check_binl(cur, end) > 0) {
        return false;
      }
      const std::uint32_t n = mp_decode_binl(&cur);
      if (n > static_cast<std::uint64_t>(end - cur)) {
        return false;
      }
      cur += n;
      break;
    }
    case MP_ARRAY: {
      if (mp_check_array(cur, end) > 0) {
        return false;
      }
      const std::uint64_t n = mp_decode_array(&cur);
      if (n > left) { // every element takes at least one byte
        return false;
      }
      pending += n;
      break;
    }
    case MP_MAP: {
      if (mp_check_map(cur, end) > 0) {
        return false;
      }
      const std::uint64_t n = mp_decode_map(&cur);
      if (2 * n > left) {
        return false;
      }
      pending += 2 * n;
      break;
    }
    case MP_EXT: // not used by AMDGPU metadata
    default:
      return false;
    }
    if (pending > static_cast<std::uint64_t>(end - cur)) {
      return false;
    }
  }
  return true;
}

std::string_view read_str(const char** cur) {
  std::uint32_t n = 0;
  const char* s = mp_decode_str(cur, &n);
  return {s, n};
}

// A non-negative integer that fits 32 bits; anything else (a negative count, a float, a string)
// is left out rather than guessed.
std::optional<std::uint32_t> read_u32(const char** cur) {
  switch (mp_typeof(**cur)) {
  case MP_UINT: {
    const std::uint64_t v = mp_decode_uint(cur);
    if (v <= std::numeric_limits<std::uint32_t>::max()) {
      return static_cast<std::uint32_t>(v);
    }
    return std::nullopt;
  }
  case MP_INT: {
    const std::int64_t v = mp_decode_int(cur);
    if (v >= 0 && v <= std::numeric_limits<std::uint32_t>::max()) {
      return static_cast<std::uint32_t>(v);
    }
    return std::nullopt;
  }
  default:
    mp_next(cur);
    return std::nullopt;
  }
}

void read_kernel(const char** cur, Kernel& k, const Limits& limits) {
  const std::uint32_t n = mp_decode_map(cur);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (mp_typeof(**cur) != MP_STR) {
      mp_next(cur);
      mp_next(cur);
      continue;
    }
    const auto key = read_str(cur);
    auto& m = k.metadata;
    std::optional<std::uint32_t>* field = nullptr;
    if (key == ".name" || key == ".symbol") {
      if (mp_typeof(**cur) == MP_STR) {
        auto v = read_str(cur);
        (key == ".name" ? k.name : k.symbol) = std::string(v.substr(0, limits.max_name_bytes));
      } else {
        mp_next(cur);
      }
      continue;
    }
    if (key == ".uses_dynamic_stack") {
      if (mp_typeof(**cur) == MP_BOOL) {
        m.uses_dynamic_stack = mp_decode_bool(cur);
      } else {
        mp_next(cur);
      }
      continue;
    }
    if (key == ".vgpr_count") {
      field = &m.vgpr_count;
    } else if (key == ".agpr_count") {
      field = &m.agpr_count;
    } else if (key == ".sgpr_count") {
      field = &m.sgpr_count;
    } else if (key == ".vgpr_spill_count") {
      field = &m.vgpr_spill_count;
    } else if (key == ".sgpr_spill_count") {
      field = &m.sgpr_spill_count;
    } else if (key == ".group_segment_fixed_size") {
      field = &m.group_segment_fixed_size;
    } else if (key == ".private_segment_fixed_size") {
      field = &m.private_segment_fixed_size;
    } else if (key == ".wavefront_size") {
      field = &m.wavefront_size;
    } else if (key == ".kernarg_segment_size") {
      field = &m.kernarg_segment_size;
    } else if (key == ".max_flat_workgroup_size") {
      field = &m.max_flat_workgroup_size;
    }
    if (field != nullptr) {
      *field = read_u32(cur);
    } else {
      mp_next(cur); // .args, .language and the rest
    }
  }
}

} // namespace

void read_metadata_note(std::span<const std::uint8_t> note, CodeObject& co, const Limits& limits) {
  const char* cur = reinterpret_cast<const char*>(note.data());
  const char* end = cur + note.size();
  if (!validate(cur, end)) {
    co.warnings.push_back("the AMDGPU metadata note is not well-formed msgpack (a length or "
                          "count runs past its " +
                          std::to_string(note.size()) + " bytes); kernel metadata not read");
    return;
  }
  if (mp_typeof(*cur) != MP_MAP) {
    co.warnings.push_back("the AMDGPU metadata note is not a msgpack map; not read");
    return;
  }
  const std::uint32_t n = mp_decode_map(&cur);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (mp_typeof(*cur) != MP_STR) {
      mp_next(&cur);
      mp_next(&cur);
      continue;
    }
    const auto key = read_str(&cur);
    if (key == "amdhsa.target" && mp_typeof(*cur) == MP_STR) {
      co.target = std::string(read_str(&cur).substr(0, 256));
    } else if (key == "amdhsa.kernels" && mp_typeof(*cur) == MP_ARRAY) {
      const std::uint32_t count = mp_decode_array(&cur);
      bool said_limit = false;
      for (std::uint32_t j = 0; j < count; ++j) {
        if (mp_typeof(*cur) != MP_MAP || co.kernels.size() >= limits.max_kernels) {
          if (co.kernels.size() >= limits.max_kernels && !said_limit) {
            said_limit = true;
            co.warnings.push_back("more than " + std::to_string(limits.max_kernels) +
                                  " kernels in the metadata; the rest were not read");
          }
          mp_next(&cur);
          continue;
        }
        Kernel k;
        k.has_metadata = true;
        read_kernel(&cur, k, limits);
        if (k.name.empty() && k.symbol.size() > 3 && k.symbol.ends_with(".kd")) {
          k.name = k.symbol.substr(0, k.symbol.size() - 3);
        }
        co.kernels.push_back(std::move(k));
      }
    } else {
      mp_next(&cur);
    }
  }
}

} // namespace rocplay::codeobj
