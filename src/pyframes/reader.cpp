// The walk from _PyRuntime to each thread's frames (include/rocplay/pyframes/pyframes.hpp).
//
// Layouts. 3.13 and later: `_Py_DebugOffsets` at the start of _PyRuntime (CPython's
// Include/internal/pycore_runtime.h in 3.13, pycore_debug_offsets.h from 3.14), read from the
// process, default and free-threaded builds alike. 3.10-3.12: the offsets below, taken with
// offsetof() over each version's own internal headers (pycore_runtime.h, pycore_interp.h,
// pycore_frame.h, cpython/code.h, cpython/pystate.h, cpython/unicodeobject.h, compiled with
// Py_BUILD_CORE) on x86-64, and agreeing with py-spy's bindings (src/python_bindings/v3_10_0.rs,
// v3_11_0.rs, v3_12_0.rs). docs/python-stacks.md says which versions were proven on real
// interpreters.
#include "rocplay/pyframes/pyframes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace rocplay::pyframes {

namespace {

struct Layout {
  int minor = 0;
  bool free_threaded = false; // Py_GIL_DISABLED (3.13+, from _Py_DebugOffsets)
  // _PyRuntimeState
  std::uint64_t interpreters_head = 0;
  // PyInterpreterState
  std::uint64_t interp_next = 0, threads_head = 0;
  // The GIL: in _PyRuntime (3.10, 3.11), behind a pointer in the interpreter (3.12), in the
  // interpreter (3.13+).
  enum class Gil { Runtime, InterpPointer, Interp, Unknown } gil = Gil::Unknown;
  std::uint64_t gil_ptr = 0, gil_locked = 0, gil_holder = 0;
  std::optional<std::uint64_t> gil_enabled; // free-threaded builds: the GIL's `enabled` (an int)
  // PyThreadState
  std::uint64_t ts_next = 0, ts_interp = 0, ts_thread_id = 0;
  std::optional<std::uint64_t> ts_native_id;   // none before 3.11
  std::uint64_t ts_frame = 0;                  // frame (3.10), cframe (3.11, 3.12), current_frame
  std::optional<std::uint64_t> cframe_current; // 3.11, 3.12: _PyCFrame.current_frame
  // frames: PyFrameObject (3.10) or _PyInterpreterFrame
  bool frame_objects = false; // 3.10
  std::uint64_t f_code = 0, f_previous = 0, f_instr = 0;
  std::optional<std::uint64_t> f_owner, f_is_entry;
  std::uint64_t executable_tag_bits = 0; // 3.14+: f_executable is a tagged _PyStackRef
  // Free-threaded 3.14+: each thread may run its own copy of the bytecode, entry `tlbc_index` of
  // the code object's co_tlbc array (cpython/code.h: _PyCodeArray), not co_code_adaptive.
  std::optional<std::uint64_t> f_tlbc_index, co_tlbc;
  // The locks of `with` blocks (3.11+, builds with the GIL; docs/python-stacks.md, "Locks"): the
  // frame's localsplus (its value stack follows the locals), a code object's co_localsplusnames
  // (a tuple as long as the locals) and co_exceptiontable.
  std::optional<std::uint64_t> f_localsplus;
  std::uint64_t co_localsplusnames = 96, co_exceptiontable = 40, tuple_size = 16;
  std::uint64_t stack_tag_bits = 0; // 3.14+: value-stack entries are tagged _PyStackRef
  bool lock_is_mutex = false;       // 3.13+: a _thread.lock is a PyMutex inside the object
  // code objects
  std::uint64_t co_filename = 0, co_name = 0, co_qualname = 0, co_linetable = 0, co_firstlineno = 0,
                co_code = 0;
  bool has_qualname = true;
  // str and bytes
  std::uint64_t ascii_size = 0, compact_size = 0, u_state = 32, u_length = 16;
  unsigned u_state_shift = 2; // where `kind` starts in the state's bit fields
  std::uint64_t bytes_size = 16, bytes_sval = 32, tp_name = 24, ob_type = 8;
};

// A frame the interpreter owns, not Python code: FRAME_OWNED_BY_CSTACK (3 in 3.12 and 3.13), and
// from 3.14 FRAME_OWNED_BY_INTERPRETER (3) and FRAME_OWNED_BY_CSTACK (4, 3.14 only)
// (pycore_frame.h, pycore_interpframe_structs.h). Each call of the C eval loop pushes one.
constexpr std::uint8_t kFirstInterpreterOwner = 3;

Layout layout_310() {
  Layout l;
  l.minor = 10;
  l.interpreters_head = 32;
  l.interp_next = 0;
  l.threads_head = 8;
  l.gil = Layout::Gil::Runtime;
  l.gil_locked = 368;
  l.gil_holder = 360;
  l.ts_next = 8;
  l.ts_interp = 16;
  l.ts_thread_id = 176;
  l.ts_frame = 24;
  l.frame_objects = true;
  l.f_previous = 24; // f_back
  l.f_code = 32;
  l.f_instr = 96; // f_lasti, an int, in code units
  l.co_filename = 104;
  l.co_name = 112;
  l.has_qualname = false;
  l.co_linetable = 120;
  l.co_firstlineno = 40;
  l.ascii_size = 48;
  l.compact_size = 72;
  return l;
}

Layout layout_311() {
  Layout l;
  l.minor = 11;
  l.interpreters_head = 40;
  l.interp_next = 0;
  l.threads_head = 16;
  l.gil = Layout::Gil::Runtime;
  l.gil_locked = 376;
  l.gil_holder = 368;
  l.ts_next = 8;
  l.ts_interp = 16;
  l.ts_thread_id = 152;
  l.ts_native_id = 160;
  l.ts_frame = 56;
  l.cframe_current = 8;
  l.f_code = 32;
  l.f_previous = 48;
  l.f_instr = 56; // prev_instr
  l.f_owner = 69;
  l.f_is_entry = 68;
  l.f_localsplus = 72;
  l.co_filename = 112;
  l.co_name = 120;
  l.co_qualname = 128;
  l.co_linetable = 136;
  l.co_firstlineno = 72;
  l.co_code = 184; // co_code_adaptive
  l.ascii_size = 48;
  l.compact_size = 72;
  return l;
}

Layout layout_312() {
  Layout l;
  l.minor = 12;
  l.interpreters_head = 40;
  l.interp_next = 0;
  l.threads_head = 72;
  l.gil = Layout::Gil::InterpPointer;
  l.gil_ptr = 384; // ceval.gil
  l.gil_locked = 16;
  l.gil_holder = 8;
  l.ts_next = 8;
  l.ts_interp = 16;
  l.ts_thread_id = 136;
  l.ts_native_id = 144;
  l.ts_frame = 56;
  l.cframe_current = 0;
  l.f_code = 0;
  l.f_previous = 8;
  l.f_instr = 56; // prev_instr
  l.f_owner = 70;
  l.f_localsplus = 72;
  l.co_filename = 112;
  l.co_name = 120;
  l.co_qualname = 128;
  l.co_linetable = 136;
  l.co_firstlineno = 68;
  l.co_code = 192;
  l.ascii_size = 40;
  l.compact_size = 56;
  return l;
}

// `_Py_DebugOffsets` as each version declares it (Include/internal/pycore_runtime.h of 3.13.0,
// Include/internal/pycore_debug_offsets.h of 3.14.10 and 3.15.2): a cookie, the version,
// free_threaded, then groups of uint64 offsets, each group starting with its structure's size.
// Only the groups up to the str object's are declared: rocplay reads no further. The offsets are
// the process's own; only where each one sits in this table is per version.
using U64 = std::uint64_t;
struct DebugOffsets313 {
  char cookie[8];
  U64 version, free_threaded;
  struct {
    U64 size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    U64 size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder;
  } interpreter_state;
  struct {
    U64 size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
        status;
  } thread_state;
  struct {
    U64 size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    U64 size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct {
    U64 size, ob_type;
  } pyobject;
  struct {
    U64 size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    U64 size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    U64 size, ma_keys, ma_values;
  } dict_object;
  struct {
    U64 size, ob_fval;
  } float_object;
  struct {
    U64 size, lv_tag, ob_digit;
  } long_object;
  struct {
    U64 size, ob_size, ob_sval;
  } bytes_object;
  struct {
    U64 size, state, length, asciiobject_size;
  } unicode_object;
};

// 3.14 adds the thread-local bytecode of free-threaded builds (a frame's tlbc_index, a code
// object's co_tlbc), threads_main, a set object, and more past the str object.
struct DebugOffsets314 {
  char cookie[8];
  U64 version, free_threaded;
  struct {
    U64 size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    U64 size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins,
        ceval_gil, gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder, code_object_generation, tlbc_generation;
  } interpreter_state;
  struct {
    U64 size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
        status;
  } thread_state;
  struct {
    U64 size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index;
  } interpreter_frame;
  struct {
    U64 size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive, co_tlbc;
  } code_object;
  struct {
    U64 size, ob_type;
  } pyobject;
  struct {
    U64 size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    U64 size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    U64 size, used, table, mask;
  } set_object;
  struct {
    U64 size, ma_keys, ma_values;
  } dict_object;
  struct {
    U64 size, ob_fval;
  } float_object;
  struct {
    U64 size, lv_tag, ob_digit;
  } long_object;
  struct {
    U64 size, ob_size, ob_sval;
  } bytes_object;
  struct {
    U64 size, state, length, asciiobject_size;
  } unicode_object;
};

// 3.15 adds the thread state's base_frame, profiling and exception fields, the exception stack
// item, type sizes, the heap type, and PyCompactUnicodeObject's size.
struct DebugOffsets315 {
  char cookie[8];
  U64 version, free_threaded;
  struct {
    U64 size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    U64 size, id, next, threads_head, threads_main, gc, imports_modules, sysdict, builtins,
        ceval_gil, gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder, code_object_generation, tlbc_generation;
  } interpreter_state;
  struct {
    U64 size, prev, next, interp, current_frame, base_frame, last_profiled_frame,
        last_profiled_frame_seq, thread_id, native_thread_id, datastack_chunk, status, holds_gil,
        gil_requested, current_exception, exc_state;
  } thread_state;
  struct {
    U64 exc_value;
  } err_stackitem;
  struct {
    U64 size, previous, executable, instr_ptr, localsplus, owner, stackpointer, tlbc_index;
  } interpreter_frame;
  struct {
    U64 size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive, co_tlbc;
  } code_object;
  struct {
    U64 size, ob_type;
  } pyobject;
  struct {
    U64 size, tp_name, tp_repr, tp_flags, tp_basicsize, tp_dictoffset;
  } type_object;
  struct {
    U64 size, ht_cached_keys;
  } heap_type_object;
  struct {
    U64 size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    U64 size, used, table, mask;
  } set_object;
  struct {
    U64 size, ma_keys, ma_values;
  } dict_object;
  struct {
    U64 size, ob_fval;
  } float_object;
  struct {
    U64 size, lv_tag, ob_digit;
  } long_object;
  struct {
    U64 size, ob_size, ob_sval;
  } bytes_object;
  struct {
    U64 size, state, length, asciiobject_size, compactunicodeobject_size;
  } unicode_object;
};

// Offsets read from the process are untrusted too: each must fall inside its structure's size,
// and the sizes must be sane, before the walk uses them.
template <class D> std::optional<Layout> layout_from_debug_offsets(const D& d, std::string& why) {
  constexpr std::uint64_t kMaxStruct = 1 << 20;
  auto within = [](std::uint64_t offset, std::uint64_t size) {
    return size > 0 && size < kMaxStruct && offset < size && offset + 8 <= size;
  };
  bool ok = within(d.runtime_state.interpreters_head, d.runtime_state.size) &&
            within(d.interpreter_state.next, d.interpreter_state.size) &&
            within(d.interpreter_state.threads_head, d.interpreter_state.size) &&
            within(d.thread_state.next, d.thread_state.size) &&
            within(d.thread_state.interp, d.thread_state.size) &&
            within(d.thread_state.current_frame, d.thread_state.size) &&
            within(d.thread_state.native_thread_id, d.thread_state.size) &&
            within(d.thread_state.thread_id, d.thread_state.size) &&
            within(d.interpreter_frame.previous, d.interpreter_frame.size) &&
            within(d.interpreter_frame.executable, d.interpreter_frame.size) &&
            within(d.interpreter_frame.instr_ptr, d.interpreter_frame.size) &&
            d.interpreter_frame.owner < d.interpreter_frame.size &&
            within(d.code_object.filename, d.code_object.size) &&
            within(d.code_object.qualname, d.code_object.size) &&
            within(d.code_object.linetable, d.code_object.size) &&
            d.code_object.firstlineno < d.code_object.size &&
            d.code_object.firstlineno + 4 <= d.code_object.size &&
            d.code_object.co_code_adaptive <= d.code_object.size &&
            d.unicode_object.asciiobject_size > 0 && d.unicode_object.asciiobject_size < 256 &&
            d.unicode_object.state < 256 &&
            d.unicode_object.state + 4 <= d.unicode_object.asciiobject_size &&
            d.unicode_object.length < 256 &&
            d.unicode_object.length + 8 <= d.unicode_object.asciiobject_size &&
            d.bytes_object.ob_sval < 256 && d.bytes_object.ob_size < 256 &&
            d.type_object.tp_name < 1024 && d.pyobject.ob_type < 256;
  if constexpr (requires { d.interpreter_frame.tlbc_index; }) {
    if (d.free_threaded != 0) {
      ok = ok && d.interpreter_frame.tlbc_index < d.interpreter_frame.size &&
           d.interpreter_frame.tlbc_index + 4 <= d.interpreter_frame.size &&
           within(d.code_object.co_tlbc, d.code_object.size);
    }
  }
  if constexpr (requires { d.unicode_object.compactunicodeobject_size; }) {
    ok = ok && d.unicode_object.compactunicodeobject_size > d.unicode_object.asciiobject_size &&
         d.unicode_object.compactunicodeobject_size < 256;
  }
  if (!ok) {
    why = "_Py_DebugOffsets holds offsets outside their structures";
    return std::nullopt;
  }
  Layout l;
  l.minor = static_cast<int>((d.version >> 16U) & 0xFFU);
  l.free_threaded = d.free_threaded != 0;
  l.interpreters_head = d.runtime_state.interpreters_head;
  l.interp_next = d.interpreter_state.next;
  l.threads_head = d.interpreter_state.threads_head;
  if (within(d.interpreter_state.gil_runtime_state_holder, d.interpreter_state.size) &&
      d.interpreter_state.gil_runtime_state_locked < d.interpreter_state.size &&
      d.interpreter_state.gil_runtime_state_locked + 4 <= d.interpreter_state.size) {
    l.gil = Layout::Gil::Interp;
    l.gil_locked = d.interpreter_state.gil_runtime_state_locked;
    l.gil_holder = d.interpreter_state.gil_runtime_state_holder;
    // A free-threaded build's GIL exists but is off unless `enabled` says otherwise. Its offset
    // is within the GIL's own structure (offsetof(struct _gil_runtime_state, enabled)), unlike
    // `locked` and `last_holder`, which are within the interpreter.
    const std::uint64_t enabled =
        d.interpreter_state.gil_runtime_state + d.interpreter_state.gil_runtime_state_enabled;
    if (l.free_threaded && d.interpreter_state.gil_runtime_state < d.interpreter_state.size &&
        d.interpreter_state.gil_runtime_state_enabled < d.interpreter_state.size &&
        enabled + 4 <= d.interpreter_state.size) {
      l.gil_enabled = enabled;
    }
  }
  l.ts_next = d.thread_state.next;
  l.ts_interp = d.thread_state.interp;
  l.ts_thread_id = d.thread_state.thread_id;
  l.ts_native_id = d.thread_state.native_thread_id;
  l.ts_frame = d.thread_state.current_frame;
  l.f_code = d.interpreter_frame.executable;
  l.f_previous = d.interpreter_frame.previous;
  l.f_instr = d.interpreter_frame.instr_ptr;
  l.f_owner = d.interpreter_frame.owner;
  if (!l.free_threaded && d.pyobject.ob_type == 8 && d.interpreter_frame.localsplus > 0 &&
      d.interpreter_frame.localsplus <= d.interpreter_frame.size &&
      within(d.code_object.localsplusnames, d.code_object.size) && d.tuple_object.ob_size < 256) {
    // co_exceptiontable follows the var-object header, co_consts and co_names (cpython/code.h,
    // unchanged since 3.11); free-threaded builds' larger headers move it: not read there.
    l.f_localsplus = d.interpreter_frame.localsplus;
    l.co_localsplusnames = d.code_object.localsplusnames;
    l.tuple_size = d.tuple_object.ob_size;
    l.lock_is_mutex = true;
  }
  l.co_filename = d.code_object.filename;
  l.co_name = d.code_object.name;
  l.co_qualname = d.code_object.qualname;
  l.co_linetable = d.code_object.linetable;
  l.co_firstlineno = d.code_object.firstlineno;
  l.co_code = d.code_object.co_code_adaptive;
  if constexpr (requires { d.interpreter_frame.tlbc_index; }) {
    // 3.14+: f_executable is a _PyStackRef, its low bits a tag (pycore_stackref.h).
    l.executable_tag_bits = 3;
    l.stack_tag_bits = 3;
    if (l.free_threaded) {
      l.f_tlbc_index = d.interpreter_frame.tlbc_index;
      l.co_tlbc = d.code_object.co_tlbc;
    }
  }
  l.ascii_size = d.unicode_object.asciiobject_size;
  if constexpr (requires { d.unicode_object.compactunicodeobject_size; }) {
    l.compact_size = d.unicode_object.compactunicodeobject_size;
  } else {
    // PyCompactUnicodeObject adds utf8_length and utf8 (3.12+: no wstr).
    l.compact_size = d.unicode_object.asciiobject_size + 16;
  }
  // The str state's bit fields: from 3.14 a free-threaded build gives `interned` a byte of its
  // own (cpython/unicodeobject.h, `#ifdef Py_GIL_DISABLED`), so kind, compact and ascii start at
  // bit 8; 3.13's free-threaded build keeps the 2-bit field.
  if constexpr (requires { d.interpreter_frame.tlbc_index; }) {
    l.u_state_shift = l.free_threaded ? 8 : 2;
  }
  l.u_state = d.unicode_object.state;
  l.u_length = d.unicode_object.length;
  l.bytes_size = d.bytes_object.ob_size;
  l.bytes_sval = d.bytes_object.ob_sval;
  l.tp_name = d.type_object.tp_name;
  l.ob_type = d.pyobject.ob_type;
  return l;
}

std::string version_text(std::uint64_t hex) {
  const unsigned major = (hex >> 24U) & 0xFFU, minor = (hex >> 16U) & 0xFFU,
                 micro = (hex >> 8U) & 0xFFU, level = (hex >> 4U) & 0xFU, serial = hex & 0xFU;
  std::string s = fmt::format("{}.{}.{}", major, minor, micro);
  if (level == 0xA || level == 0xB || level == 0xC) {
    s += fmt::format("{}{}", level == 0xA ? "a" : level == 0xB ? "b" : "rc", serial);
  }
  return s;
}

class Walker {
public:
  Walker(Memory& m, const Layout& l, const Limits& lim) : mem_(m), l_(l), lim_(lim) {}

  template <class T> bool get(std::uint64_t address, T& out) {
    if (address == 0 || address + sizeof(T) < address) {
      return false;
    }
    return mem_.read(address, &out, sizeof(T));
  }
  std::uint64_t ptr(std::uint64_t address, bool& ok) {
    std::uint64_t v = 0;
    ok = get(address, v);
    return v;
  }

  // A str object's text: compact ASCII, or compact UCS1/2/4 turned into UTF-8.
  std::optional<std::string> str(std::uint64_t obj) {
    if (obj == 0) {
      return std::nullopt;
    }
    if (auto it = strings_.find(obj); it != strings_.end()) {
      return it->second;
    }
    std::uint32_t state = 0;
    std::int64_t length = 0;
    if (!get(obj + l_.u_state, state) || !get(obj + l_.u_length, length) || length < 0) {
      return std::nullopt;
    }
    const unsigned shift = l_.u_state_shift;
    const unsigned kind = (state >> shift) & 7U, compact = (state >> (shift + 3U)) & 1U,
                   ascii = (state >> (shift + 4U)) & 1U;
    if (compact == 0 || (kind != 1 && kind != 2 && kind != 4)) {
      return std::nullopt; // legacy strings: not what code objects hold
    }
    const auto chars = static_cast<std::size_t>(std::min<std::int64_t>(length, lim_.max_string));
    const std::uint64_t data = obj + (ascii != 0 ? l_.ascii_size : l_.compact_size);
    std::string raw(chars * kind, '\0');
    if (!mem_.read(data, raw.data(), raw.size())) {
      return std::nullopt;
    }
    std::string out;
    if (kind == 1 && ascii != 0) {
      out = raw;
    } else {
      for (std::size_t i = 0; i < chars; ++i) {
        std::uint32_t cp = 0;
        std::memcpy(&cp, raw.data() + i * kind, kind); // little-endian hosts
        append_utf8(out, cp);
      }
    }
    auto text = clean_text(out, lim_.max_string);
    strings_.emplace(obj, text);
    return text;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      cp = '?';
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6U));
      out += static_cast<char>(0x80 | (cp & 0x3FU));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12U));
      out += static_cast<char>(0x80 | ((cp >> 6U) & 0x3FU));
      out += static_cast<char>(0x80 | (cp & 0x3FU));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18U));
      out += static_cast<char>(0x80 | ((cp >> 12U) & 0x3FU));
      out += static_cast<char>(0x80 | ((cp >> 6U) & 0x3FU));
      out += static_cast<char>(0x80 | (cp & 0x3FU));
    }
  }

  // Is `obj` of the type named `name`? The type's address is remembered once its name matched.
  bool is_type(std::uint64_t obj, std::string_view name, std::uint64_t& known) {
    std::uint64_t type = 0;
    if (!get(obj + l_.ob_type, type) || type == 0) {
      return false;
    }
    if (known != 0) {
      return type == known;
    }
    std::uint64_t name_ptr = 0;
    std::array<char, 16> buf{};
    if (!get(type + l_.tp_name, name_ptr) || !mem_.read(name_ptr, buf.data(), name.size() + 1)) {
      return false;
    }
    if (std::string_view(buf.data(), name.size()) != name || buf[name.size()] != '\0') {
      return false;
    }
    known = type;
    return true;
  }

  struct Code {
    std::string name, file;
    std::int64_t first_line = 0;
    std::vector<std::uint8_t> table;
    // For the locks of `with` blocks (Layout::f_localsplus).
    std::vector<std::uint8_t> exception_table;
    std::int64_t locals = -1; // co_nlocalsplus
  };

  const Code* code(std::uint64_t obj, std::string& why) {
    if (auto it = codes_.find(obj); it != codes_.end()) {
      return &it->second;
    }
    if (!is_type(obj, "code", code_type_)) {
      why = fmt::format("{:#x} is not a code object", obj);
      return nullptr;
    }
    Code c;
    bool ok = true;
    const std::uint64_t name_obj = ptr(obj + (l_.has_qualname ? l_.co_qualname : l_.co_name), ok);
    const std::uint64_t file_obj = ok ? ptr(obj + l_.co_filename, ok) : 0;
    const std::uint64_t table_obj = ok ? ptr(obj + l_.co_linetable, ok) : 0;
    std::int32_t first = 0;
    if (!ok || !get(obj + l_.co_firstlineno, first)) {
      why = fmt::format("code object {:#x} cannot be read", obj);
      return nullptr;
    }
    c.name = str(name_obj).value_or("?");
    c.file = str(file_obj).value_or("?");
    c.first_line = first;
    c.table = bytes(table_obj);
    std::uint64_t exception_table = 0, names = 0;
    std::int64_t locals = 0;
    if (l_.f_localsplus && get(obj + l_.co_exceptiontable, exception_table) &&
        get(obj + l_.co_localsplusnames, names) && get(names + l_.tuple_size, locals) &&
        locals >= 0 && locals < (1 << 16)) {
      c.exception_table = bytes(exception_table);
      c.locals = locals;
    }
    return &codes_.emplace(obj, std::move(c)).first->second;
  }

  // A bytes object's contents (at most max_linetable bytes); empty when it is not one.
  std::vector<std::uint8_t> bytes(std::uint64_t obj) {
    std::vector<std::uint8_t> out;
    std::int64_t size = 0;
    if (obj != 0 && is_type(obj, "bytes", bytes_type_) && get(obj + l_.bytes_size, size) &&
        size > 0 && static_cast<std::uint64_t>(size) <= lim_.max_linetable) {
      out.resize(static_cast<std::size_t>(size));
      if (!mem_.read(obj + l_.bytes_sval, out.data(), out.size())) {
        out.clear();
      }
    }
    return out;
  }

  // The name of an object's type, its first 31 bytes; empty when unreadable.
  const std::string& type_name(std::uint64_t obj) {
    static const std::string kNone;
    std::uint64_t type = 0;
    if (obj == 0 || obj % 8 != 0 || !get(obj + l_.ob_type, type) || type == 0) {
      return kNone;
    }
    if (auto it = type_names_.find(type); it != type_names_.end()) {
      return it->second;
    }
    std::uint64_t name_ptr = 0;
    std::array<char, 32> buf{};
    std::string name;
    if (get(type + l_.tp_name, name_ptr) && mem_.read(name_ptr, buf.data(), buf.size() - 1)) {
      name.assign(buf.data(), ::strnlen(buf.data(), buf.size() - 1));
    }
    return type_names_.emplace(type, std::move(name)).first->second;
  }

  // A C string of at most 15 bytes at `address`, for comparing names.
  std::string short_c_string(std::uint64_t address) {
    std::array<char, 16> buf{};
    return mem_.read(address, buf.data(), buf.size() - 1)
               ? std::string(buf.data(), ::strnlen(buf.data(), buf.size() - 1))
               : std::string();
  }

  // The threading.Lock objects the frame at `f` holds in `with` blocks: its value stack's live
  // entries at code unit `index` (the depth the exception table's entry there keeps) hold each
  // lock's `__exit__`: a bound builtin method (3.11-3.13) or a method descriptor followed by the
  // lock itself (3.14+).
  std::vector<std::uint64_t> held_locks(std::uint64_t f, const Code& c, std::int64_t index) {
    std::vector<std::uint64_t> out;
    const auto depth = handler_depth(c.exception_table, index);
    if (!depth || *depth == 0 || c.locals < 0) {
      return out;
    }
    constexpr std::uint32_t kMaxDepth = 64;
    std::array<std::uint64_t, kMaxDepth> slots{};
    const std::uint32_t n = std::min(*depth, kMaxDepth);
    const std::uint64_t base = f + *l_.f_localsplus + 8 * static_cast<std::uint64_t>(c.locals);
    if (!mem_.read(base, slots.data(), 8 * n)) {
      return out;
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint64_t v = slots[i] & ~l_.stack_tag_bits;
      const std::string& type = type_name(v);
      std::uint64_t lock = 0;
      if (type == "builtin_function_or_method") {
        // PyCFunctionObject: m_ml, then m_self, after the object header.
        std::uint64_t method = 0, self = 0, name = 0;
        if (get(v + l_.ob_type + 8, method) && get(v + l_.ob_type + 16, self) &&
            get(method, name) && short_c_string(name) == "__exit__") {
          lock = self;
        }
      } else if (type == "method_descriptor" && i + 1 < n) {
        // PyMethodDescrObject: d_type, then d_name (a str), after the object header.
        std::uint64_t name = 0;
        if (get(v + l_.ob_type + 16, name) && str(name) == "__exit__") {
          lock = slots[i + 1] & ~l_.stack_tag_bits;
        }
      }
      if (lock != 0 && type_name(lock) == "_thread.lock" &&
          std::find(out.begin(), out.end(), lock) == out.end()) {
        out.push_back(lock);
      }
    }
    return out;
  }

  struct FrameFields {
    std::uint64_t previous = 0, code_obj = 0, instr = 0;
    std::uint8_t owner = 0, entry = 0;
    std::int32_t tlbc_index = 0;
  };

  // The fields of the frame at `f`: in one read of its first bytes when they are few (they are,
  // in every layout), else field by field. `instr` is f_lasti (an int) for 3.10's frame objects.
  bool frame_fields(std::uint64_t f, FrameFields& out) {
    const std::size_t instr_size = l_.frame_objects ? 4 : 8;
    std::size_t span = std::max({l_.f_previous + 8, l_.f_code + 8, l_.f_instr + instr_size});
    if (l_.f_owner) {
      span = std::max<std::size_t>(span, *l_.f_owner + 1);
    }
    if (l_.f_is_entry) {
      span = std::max<std::size_t>(span, *l_.f_is_entry + 1);
    }
    if (l_.f_tlbc_index) {
      span = std::max<std::size_t>(span, *l_.f_tlbc_index + 4);
    }
    std::array<std::uint8_t, 256> buf{};
    if (span <= buf.size() && f + span > f && mem_.read(f, buf.data(), span)) {
      std::memcpy(&out.previous, buf.data() + l_.f_previous, 8);
      std::memcpy(&out.code_obj, buf.data() + l_.f_code, 8);
      out.instr = 0;
      std::memcpy(&out.instr, buf.data() + l_.f_instr, instr_size);
      out.owner = l_.f_owner ? buf[*l_.f_owner] : 0;
      out.entry = l_.f_is_entry ? buf[*l_.f_is_entry] : 0;
      if (l_.f_tlbc_index) {
        std::memcpy(&out.tlbc_index, buf.data() + *l_.f_tlbc_index, 4);
      }
      return true;
    }
    bool ok = true;
    out.previous = ptr(f + l_.f_previous, ok);
    out.code_obj = ok ? ptr(f + l_.f_code, ok) : 0;
    out.instr = 0;
    ok = ok && mem_.read(f + l_.f_instr, &out.instr, instr_size);
    ok = ok && (!l_.f_owner || get(f + *l_.f_owner, out.owner));
    ok = ok && (!l_.f_is_entry || get(f + *l_.f_is_entry, out.entry));
    ok = ok && (!l_.f_tlbc_index || get(f + *l_.f_tlbc_index, out.tlbc_index));
    return ok;
  }

  // Where the frame's bytecode starts: co_code_adaptive, or in a free-threaded 3.14+ build the
  // thread's own copy, entries[tlbc_index] of co_tlbc (entry 0 is co_code_adaptive itself).
  std::optional<std::uint64_t> bytecode_start(std::uint64_t code_obj, std::int32_t tlbc_index) {
    if (!l_.co_tlbc || tlbc_index == 0) {
      return code_obj + l_.co_code;
    }
    const auto key = std::pair{code_obj, tlbc_index};
    if (auto it = bytecode_.find(key); it != bytecode_.end()) {
      return it->second;
    }
    std::uint64_t array = 0;
    std::int64_t size = 0;
    std::uint64_t entry = 0;
    std::optional<std::uint64_t> start;
    if (tlbc_index > 0 && get(code_obj + *l_.co_tlbc, array) && get(array, size) &&
        tlbc_index < size && get(array + 8 + 8 * static_cast<std::uint64_t>(tlbc_index), entry) &&
        entry != 0) {
      start = entry;
    }
    bytecode_.emplace(key, start);
    return start;
  }

  void frames(std::uint64_t first, Thread& t) {
    std::unordered_set<std::uint64_t> seen;
    std::uint64_t f = first;
    while (f != 0) {
      if (t.frames.size() >= lim_.max_frames) {
        t.note = fmt::format("stack cut at {} Python frames", lim_.max_frames);
        return;
      }
      if (!seen.insert(f).second) {
        t.note = "the frame list loops; the stack ends there";
        return;
      }
      // One read per frame: every field the walk needs lies in its first bytes.
      FrameFields ff;
      if (!frame_fields(f, ff)) {
        t.note = fmt::format("frame {:#x} cannot be read; the stack ends there", f);
        return;
      }
      if (l_.f_owner && ff.owner >= kFirstInterpreterOwner) {
        // The eval loop's own frame (3.12+): the frame inside it is the entry of one eval-loop
        // call.
        if (!t.frames.empty()) {
          t.frames.back().entry = true;
        }
        f = ff.previous;
        continue;
      }
      const std::uint64_t code_obj = ff.code_obj & ~l_.executable_tag_bits;
      std::string why;
      const Code* c = code(code_obj, why);
      if (c == nullptr) {
        t.note = fmt::format("{}; the stack ends there", why);
        return;
      }
      Frame out;
      out.function = c->name;
      out.file = c->file;
      if (l_.frame_objects) {
        const auto lasti = static_cast<std::int32_t>(static_cast<std::uint32_t>(ff.instr));
        out.line = line_310(c->table, c->first_line, static_cast<std::int64_t>(lasti) * 2);
        out.entry = true; // one eval-loop call per frame object
      } else {
        const auto start = bytecode_start(code_obj, ff.tlbc_index);
        const std::uint64_t instr = ff.instr;
        // A pointer outside any sane range of its own code is not trusted for a line.
        const auto index = start ? static_cast<std::int64_t>(instr - *start) / 2 : 0;
        if (start && instr + 2 >= *start &&
            index < static_cast<std::int64_t>(lim_.max_linetable) * 8) {
          out.line = line_311(c->table, c->first_line, index);
          if (l_.f_localsplus) {
            out.held_locks = held_locks(f, *c, index);
          }
        }
        out.entry = ff.entry != 0;
      }
      t.frames.push_back(std::move(out));
      f = ff.previous;
    }
  }

  std::uint64_t code_type_ = 0, bytes_type_ = 0;

private:
  Memory& mem_;
  const Layout& l_;
  const Limits& lim_;
  std::unordered_map<std::uint64_t, std::string> strings_;
  std::unordered_map<std::uint64_t, Code> codes_;
  std::unordered_map<std::uint64_t, std::string> type_names_;
  std::map<std::pair<std::uint64_t, std::int32_t>, std::optional<std::uint64_t>> bytecode_;
};

} // namespace

namespace {

// Which held lock each thread sleeps on acquiring: the futex word of a thread blocked on a
// _thread.lock is the lock's semaphore, whose address the object holds after its header
// (3.11, 3.12: lock_lock), or, from 3.13, the semaphore of a parking-lot entry (Python/
// parking_lot.c: struct wait_entry {park_arg, addr, sema, ...}) whose `addr`, the word before
// `sema`, is the PyMutex inside the object.
void match_lock_waits(Walker& w, const Layout& l, const FutexOf& futex_of, Stacks& out) {
  std::map<std::uint64_t, std::uint64_t> lock_of_word;
  for (const auto& t : out.threads) {
    for (const auto& f : t.frames) {
      for (const std::uint64_t lock : f.held_locks) {
        const std::uint64_t inside = lock + l.ob_type + 8;
        std::uint64_t word = inside;
        if (l.lock_is_mutex || w.get(inside, word)) {
          lock_of_word.emplace(word, lock);
        }
      }
    }
  }
  if (lock_of_word.empty()) {
    return;
  }
  for (auto& t : out.threads) {
    const auto futex = t.native_id != 0 ? futex_of(t.native_id) : std::nullopt;
    std::uint64_t word = futex.value_or(0);
    if (word == 0 || (l.lock_is_mutex && !w.get(word - 8, word))) {
      continue;
    }
    if (auto it = lock_of_word.find(word); it != lock_of_word.end()) {
      t.waits_for_lock = it->second;
    }
  }
}

} // namespace

Stacks read(Memory& memory, const Runtime& runtime, const Limits& limits, const FutexOf& futex_of) {
  Stacks out;
  std::uint64_t hex = 0;
  // 3.13+: the debug offsets' cookie opens _PyRuntime.
  std::array<char, 8> cookie{};
  std::optional<Layout> layout;
  if (memory.read(runtime.address, cookie.data(), cookie.size()) &&
      std::string_view(cookie.data(), cookie.size()) == "xdebugpy") {
    std::uint64_t version = 0;
    memory.read(runtime.address + 8, &version, sizeof version);
    hex = version;
    out.version = version_text(version);
    const unsigned major = (version >> 24U) & 0xFFU, minor = (version >> 16U) & 0xFFU;
    std::string why;
    auto from_process = [&](auto d) {
      if (!memory.read(runtime.address, &d, sizeof d)) {
        why = "_Py_DebugOffsets cannot be read";
        return;
      }
      layout = layout_from_debug_offsets(d, why);
    };
    if (major == 3 && minor == 13) {
      from_process(DebugOffsets313{});
    } else if (major == 3 && minor == 14) {
      from_process(DebugOffsets314{});
    } else if (major == 3 && minor == 15) {
      from_process(DebugOffsets315{});
    } else {
      // A later version may have moved the fields rocplay needs inside _Py_DebugOffsets: a note,
      // not a guess.
      why = "its _Py_DebugOffsets layout is not one rocplay knows (3.13-3.15); no Python frames, "
            "GIL or thread states read";
    }
    if (!layout) {
      out.notes.push_back("CPython " + out.version + ": " + why);
      return out;
    }
    out.free_threaded = layout->free_threaded;
  } else {
    if (runtime.py_version) {
      std::uint32_t v = 0;
      if (memory.read(*runtime.py_version, &v, sizeof v)) {
        hex = v;
      }
    }
    int major = runtime.major, minor = runtime.minor;
    if (hex != 0) {
      out.version = version_text(hex);
      major = static_cast<int>((hex >> 24U) & 0xFFU);
      minor = static_cast<int>((hex >> 16U) & 0xFFU);
    } else if (major != 0) {
      out.version = fmt::format("{}.{}", major, minor);
    }
    if (major == 3 && minor == 10) {
      layout = layout_310();
    } else if (major == 3 && minor == 11) {
      layout = layout_311();
    } else if (major == 3 && minor == 12) {
      layout = layout_312();
    } else {
      out.notes.push_back(fmt::format(
          "CPython {}: no layout table for this version (3.10-3.12 have one, 3.13 publishes "
          "its own); no Python frames",
          out.version.empty() ? std::string("of unknown version") : out.version));
      return out;
    }
  }
  const Layout& l = *layout;
  Walker w(memory, l, limits);
  bool ok = true;
  std::uint64_t interp = w.ptr(runtime.address + l.interpreters_head, ok);
  if (!ok) {
    out.notes.push_back(fmt::format(
        "CPython {}: _PyRuntime at {:#x} cannot be read: rocplay may not read this process's "
        "memory (run it as root, or as the target's user with "
        "/proc/sys/kernel/yama/ptrace_scope 0)",
        out.version, runtime.address));
    return out;
  }
  std::unordered_set<std::uint64_t> seen_interps;
  std::unordered_set<std::uint64_t> seen_threads;
  std::unordered_map<std::uint64_t, std::size_t> by_tstate;
  std::optional<std::uint64_t> gil_holder;
  bool gil_read = false;
  auto read_gil = [&](std::uint64_t base) {
    if (l.gil_enabled) {
      // A free-threaded build runs without its GIL unless something turned it on (PYTHON_GIL=1,
      // or an extension module not declared free-threading safe): `enabled` counts those.
      std::int32_t enabled = 0;
      if (!w.get(base + *l.gil_enabled, enabled)) {
        return;
      }
      out.gil_disabled = enabled == 0;
      if (out.gil_disabled) {
        return;
      }
    }
    std::int32_t locked = 0;
    std::uint64_t holder = 0;
    if (w.get(base + l.gil_locked, locked) && w.get(base + l.gil_holder, holder)) {
      gil_read = true;
      if (locked != 0 && holder != 0) {
        gil_holder = holder;
      }
    }
  };
  if (l.gil == Layout::Gil::Runtime) {
    read_gil(runtime.address);
  }
  while (interp != 0) {
    if (seen_interps.size() >= limits.max_interpreters) {
      out.notes.push_back(
          fmt::format("more than {} interpreters; the rest not read", limits.max_interpreters));
      break;
    }
    if (!seen_interps.insert(interp).second) {
      out.notes.push_back("the interpreter list loops");
      break;
    }
    if (l.gil == Layout::Gil::InterpPointer) {
      std::uint64_t gil = w.ptr(interp + l.gil_ptr, ok);
      if (ok && gil != 0) {
        read_gil(gil);
      }
    } else if (l.gil == Layout::Gil::Interp && seen_interps.size() == 1) {
      read_gil(interp);
    }
    std::uint64_t ts = w.ptr(interp + l.threads_head, ok);
    if (!ok) {
      out.notes.push_back(fmt::format("interpreter {:#x} cannot be read", interp));
      break;
    }
    while (ts != 0) {
      if (out.threads.size() >= limits.max_threads) {
        out.notes.push_back(
            fmt::format("more than {} threads; the rest not read", limits.max_threads));
        break;
      }
      if (!seen_threads.insert(ts).second) {
        out.notes.push_back("a thread list loops");
        break;
      }
      std::uint64_t back = 0;
      std::uint64_t next = w.ptr(ts + l.ts_next, ok);
      if (!ok || !w.get(ts + l.ts_interp, back) || back != interp) {
        // A thread state that does not name its interpreter is not one: the layout is wrong
        // for this build, or the memory is not what it should be.
        out.notes.push_back(fmt::format(
            "thread state {:#x} does not point back at its interpreter: CPython {}'s layout "
            "does not match this process; Python frames not read",
            ts, out.version));
        out.threads.clear();
        return out;
      }
      Thread t;
      w.get(ts + l.ts_thread_id, t.thread_id);
      if (l.ts_native_id) {
        w.get(ts + *l.ts_native_id, t.native_id);
      } else if (t.thread_id != 0) {
#if defined(__x86_64__)
        // 3.10 keeps only the pthread_t: glibc's struct pthread holds the LWP (`tid`) at 0x2d0 on
        // x86-64 (py-spy reads it the same way).
        std::int32_t tid = 0;
        if (w.get(t.thread_id + 0x2d0, tid) && tid > 0) {
          t.native_id = static_cast<std::uint64_t>(tid);
        }
#endif
      }
      std::uint64_t frame = w.ptr(ts + l.ts_frame, ok);
      if (ok && l.cframe_current && frame != 0) {
        frame = w.ptr(frame + *l.cframe_current, ok);
      }
      if (!ok) {
        t.note = "the thread's current frame cannot be read";
      } else {
        w.frames(frame, t);
      }
      by_tstate[ts] = out.threads.size();
      out.threads.push_back(std::move(t));
      ts = next;
    }
    interp = w.ptr(interp + l.interp_next, ok);
    if (!ok) {
      break;
    }
  }
  out.gil_known = gil_read;
  if (gil_holder) {
    if (auto it = by_tstate.find(*gil_holder); it != by_tstate.end()) {
      out.threads[it->second].holds_gil = true;
    }
  }
  if (futex_of && l.f_localsplus) {
    match_lock_waits(w, l, futex_of, out);
  }
  return out;
}

std::optional<Stacks> read_process(int pid, const Limits& limits) {
  auto runtime = locate(pid);
  if (!runtime) {
    return std::nullopt;
  }
  ProcessMemory memory(pid);
  return read(memory, *runtime, limits);
}

} // namespace rocplay::pyframes
