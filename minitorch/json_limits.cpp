/// \file json_limits.cpp
#include "minitorch/json_limits.h"

namespace minitorch {

using nlohmann::json;

json parse_json_bounded(const std::string& text, const std::string& what, const JsonParseCallback& extra) {
  // The callback's depth is the nesting of the value being built; throwing stops the parse before
  // any deeper level is allocated.
  auto bounded = [&](int depth, json::parse_event_t ev, json& parsed) {
    if ((ev == json::parse_event_t::object_start || ev == json::parse_event_t::array_start) && depth >= kMaxJsonDepth)
      throw JsonLimitError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels (arrays and objects); a valid file needs only a few");
    return extra ? extra(depth, ev, parsed) : true;
  };
  return json::parse(text, bounded);
}

std::string truncate_for_message(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return s.substr(0, cut) + "...";
}

std::string json_excerpt(const json& v) {
  // Containers: dump only as many elements as the excerpt can show, not a megabyte to cut it down.
  if (v.is_array() || v.is_object()) {
    std::string out = v.is_array() ? "[" : "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= kMaxJsonExcerpt; ++it, first = false) {
      if (!first) out += ",";
      if (v.is_object()) out += json(it.key()).dump() + ":";
      out += json_excerpt(*it);
    }
    out += v.is_array() ? "]" : "}";
    return truncate_for_message(out);
  }
  return truncate_for_message(v.dump());
}

}  // namespace minitorch
