#include "rocplay/snapshot/shared_string.hpp"

#include <nlohmann/json.hpp>

#include <new>
#include <ostream>

namespace rocplay {

void SharedString::assign(std::string_view text) {
  if (text.size() <= kInlineBytes) {
    if (!text.empty()) {
      std::memcpy(bytes_, text.data(), text.size());
    }
    set_inline_size(text.size());
    return;
  }
  if (text.size() > UINT32_MAX - sizeof(Block) - 1) {
    throw std::length_error("SharedString: text over 4 GB");
  }
  void* memory = ::operator new(sizeof(Block) + text.size() + 1);
  Block* b = new (memory) Block{{1}, static_cast<std::uint32_t>(text.size())};
  std::memcpy(b->chars(), text.data(), text.size());
  b->chars()[text.size()] = '\0';
  std::memcpy(bytes_, &b, sizeof b);
  tag_ = kHeapTag;
}

void SharedString::release_block() noexcept {
  Block* b = block();
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    b->~Block();
    ::operator delete(b);
  }
}

SharedString Interner::get(std::string_view text) {
  if (text.size() <= SharedString::kInlineBytes) {
    return SharedString(text); // inline: nothing to share
  }
  if (auto it = strings_.find(text); it != strings_.end()) {
    return it->second;
  }
  SharedString shared(text);
  strings_.emplace(shared.view(), shared);
  return shared;
}

std::ostream& operator<<(std::ostream& out, const SharedString& text) {
  return out << text.view();
}

void to_json(nlohmann::json& json, const SharedString& text) {
  json = text.str();
}

void from_json(const nlohmann::json& json, SharedString& text) {
  text = json.get_ref<const std::string&>();
}

} // namespace rocplay
