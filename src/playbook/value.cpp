// playbook::Value: what variables, registered results and loop items hold.
#include "rocplay/playbook/playbook.hpp"

#include <fmt/format.h>

namespace rocplay::playbook {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}

Value Value::integer(std::int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}

Value Value::address(std::uint64_t a) {
  Value v;
  v.kind_ = Kind::Address;
  v.u_ = a;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.s_ = std::move(s);
  return v;
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return v;
}

Value Value::map(Entries entries) {
  Value v;
  v.kind_ = Kind::Map;
  v.map_ = std::make_shared<const Entries>(std::move(entries));
  return v;
}

const std::vector<Value>& Value::items() const {
  static const std::vector<Value> kEmpty;
  return list_ ? *list_ : kEmpty;
}

const Value::Entries& Value::entries() const {
  static const Entries kEmpty;
  return map_ ? *map_ : kEmpty;
}

const Value* Value::get(std::string_view key) const {
  if (kind_ != Kind::Map || !map_) {
    return nullptr;
  }
  for (const auto& [k, v] : *map_) {
    if (k == key) {
      return &v;
    }
  }
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
  case Kind::Null:
    return false;
  case Kind::Bool:
    return b_;
  case Kind::Int:
    return i_ != 0;
  case Kind::Address:
    return u_ != 0;
  case Kind::String:
    return !s_.empty();
  case Kind::List:
    return !items().empty();
  case Kind::Map:
    return !entries().empty();
  }
  return false;
}

std::string Value::repr() const {
  switch (kind_) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return b_ ? "true" : "false";
  case Kind::Int:
    return std::to_string(i_);
  case Kind::Address:
    return fmt::format("{:#x}", u_);
  case Kind::String: {
    std::string out = "\"";
    for (char c : s_) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  case Kind::List:
    return fmt::format("[{} items]", items().size());
  case Kind::Map:
    return fmt::format("{{{} fields}}", entries().size());
  }
  return "?";
}

nlohmann::json Value::to_json() const {
  switch (kind_) {
  case Kind::Null:
    return nullptr;
  case Kind::Bool:
    return b_;
  case Kind::Int:
    return i_;
  case Kind::Address:
    return fmt::format("{:#x}", u_);
  case Kind::String:
    return mi::lossy_utf8(s_); // MI text may hold any bytes; JSON wants UTF-8
  case Kind::List: {
    auto out = nlohmann::json::array();
    for (const auto& item : items()) {
      out.push_back(item.to_json());
    }
    return out;
  }
  case Kind::Map: {
    auto out = nlohmann::json::object();
    for (const auto& [k, v] : entries()) {
      out[k] = v.to_json();
    }
    return out;
  }
  }
  return nullptr;
}

} // namespace rocplay::playbook
