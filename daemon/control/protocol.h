// The control socket protocol between histctl and histd: one request and one
// response per connection, each a JSON object in a frame of a 4-byte
// little-endian length and that many bytes.
//
// Request:  {"op": "add"|"remove"|"list"|"show"|"errors"|"clear_errors"|"source"|"status"|"restore"|
//                  "synth_add"|"synth_remove"|"synth_list"|"trace"|"clear_trace",
//            "event": "system:event", "command": "...", "json": bool (list, show, status)}
// Response: {"ok": true|false, "output": "...", "error": "...", "errno": N,
//            "command": "...", "caret": N}   (command/caret for diagnostics)
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "histd/result.h"

namespace histd::control {

inline constexpr size_t kMaxFrame = 16 << 20;

Status write_frame(int fd, const nlohmann::json& message);
Expected<nlohmann::json> read_frame(int fd);

// Splits "system:event"; nullopt when malformed.
std::optional<std::pair<std::string, std::string>> split_event(const std::string& event);

}  // namespace histd::control
