// A process image in a buffer for the pyframes walker's tests: bytes put at addresses, read
// back by the walker as it reads a live process (pyframes::Memory); a read of any byte not put
// fails, as a read of unmapped memory does.
#pragma once

#include "rocplay/pyframes/pyframes.hpp"

#include <cstdint>
#include <map>
#include <string_view>

namespace rocplay::testing {

class FakeMemory : public pyframes::Memory {
public:
  void put(std::uint64_t address, const void* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
      bytes_[address + i] = static_cast<const std::uint8_t*>(data)[i];
    }
  }
  template <class T> void put(std::uint64_t address, T value) {
    put(address, &value, sizeof value);
  }
  void put_str(std::uint64_t obj, std::string_view s) {
    put<std::uint32_t>(obj + 32, 0x64); // compact ASCII, kind 1
    put<std::int64_t>(obj + 16, static_cast<std::int64_t>(s.size()));
    put(obj + 48, s.data(), s.size());
  }
  void erase(std::uint64_t address) { bytes_.erase(address); }
  bool read(std::uint64_t address, void* out, std::size_t size) override {
    auto* o = static_cast<std::uint8_t*>(out);
    for (std::size_t i = 0; i < size; ++i) {
      auto it = bytes_.find(address + i);
      if (it == bytes_.end()) {
        return false;
      }
      o[i] = it->second;
    }
    return true;
  }

private:
  std::map<std::uint64_t, std::uint8_t> bytes_;
};

} // namespace rocplay::testing
