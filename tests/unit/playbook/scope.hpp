// A Scope over a plain map, for evaluating conditions and templates in tests.
#pragma once

#include "playbook/internal.hpp"

#include <map>
#include <set>
#include <string>

namespace rocplay::playbook::test {

class MapScope : public detail::Scope {
public:
  std::map<std::string, Value> values;
  std::set<std::string> mi_commands;

  const Value* lookup(std::string_view root) const override {
    auto it = values.find(std::string(root));
    return it == values.end() ? nullptr : &it->second;
  }
  bool has_mi_command(const std::string& name) const override {
    return mi_commands.count(name) != 0;
  }
};

} // namespace rocplay::playbook::test
