// Every name that enters the model is demangled here, once (the demangler itself lives in
// src/kernels/). Linkage names stay beside the demangled ones where the model has a field.
#include "rocplay/kernels/kernel_names.hpp"
#include "rocplay/snapshot/snapshot.hpp"

#include <unordered_map>

namespace rocplay::snapshot {
namespace {

// `_Z4kernv.kd` -> {`kern()`, `_Z4kernv`}; a name that is not mangled keeps its text (a `.kd`
// descriptor suffix dropped) and gets no linkage name.
void demangle_into(std::string& name, std::string& linkage) {
  if (!is_mangled(name)) {
    return;
  }
  std::string raw = name;
  if (raw.size() > 3 && raw.ends_with(".kd")) {
    raw.resize(raw.size() - 3);
  }
  std::string out = demangle(raw);
  if (out == raw) {
    return; // refused (malformed or over the bounds): the name stays as it came
  }
  if (linkage.empty()) {
    linkage = std::move(raw);
  }
  name = std::move(out);
}

} // namespace

void demangle_names(Snapshot& s) {
  for (auto& d : s.dispatches) {
    demangle_into(d.kernel_name, d.linkage_name);
  }
  for (auto& t : s.host_threads) {
    for (auto& f : t.frames) {
      demangle_into(f.function, f.linkage_name);
    }
  }
  if (s.fault) {
    for (auto& f : s.fault->frames) {
      demangle_into(f.function, f.linkage_name);
    }
  }
  for (auto& l : s.source_lines) {
    demangle_into(l.function, l.linkage_name);
  }
  for (auto& l : s.lanes) {
    std::string unused;
    demangle_into(l.function, unused);
  }
  // Waves share their texts: demangle each distinct one once, and keep sharing.
  std::unordered_map<std::string, SharedString> done;
  Interner strings;
  auto fix = [&](SharedString& text) {
    if (text.empty() || !is_mangled(text.view())) {
      return;
    }
    auto [it, inserted] = done.try_emplace(text.str());
    if (inserted) {
      std::string name = text.str();
      std::string unused;
      demangle_into(name, unused);
      it->second = strings.get(name);
    }
    text = it->second;
  };
  for (auto& w : s.waves) {
    fix(w.function);
    fix(w.inline_function);
  }
}

} // namespace rocplay::snapshot
