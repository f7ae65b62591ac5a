// Notes that carry a list (rocplay/core/notes.hpp).
#include "rocplay/core/notes.hpp"

namespace rocplay {

std::vector<std::string> list_notes(std::string_view head, const std::vector<std::string>& words) {
  constexpr std::size_t kNoteBytes = 3'000;
  std::vector<std::string> notes;
  std::string note;
  for (const auto& word : words) {
    note += note.empty() ? std::string(head) : std::string(" ");
    note += word;
    if (note.size() > kNoteBytes) {
      notes.push_back(std::move(note));
      note.clear();
    }
  }
  if (!note.empty()) {
    notes.push_back(std::move(note));
  }
  return notes;
}

} // namespace rocplay
