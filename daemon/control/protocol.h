// SPDX-License-Identifier: GPL-2.0-only
// The control socket protocol between histctl and histd: one request and one
// response per connection, each a JSON object in a frame of a 4-byte
// little-endian length and that many bytes.
//
// Request:  {"op": "add"|"remove"|"list"|"show"|"errors"|"clear_errors"|"source"|"preview"|"status"|"restore"|
//                  "reload"|"synth_add"|"synth_remove"|"synth_list"|"trace"|"clear_trace",
//            "event": "system:event", "command": "...", "json": bool (list, show, status)}
// Response: {"ok": true|false, "output": "...", "error": "...", "errno": N,
//            "command": "...", "caret": N,   (command/caret for diagnostics)
//            "plans": "...",                 (source: its hist triggers' plans;
//                                             preview: the command's)
// "preview" answers what "command" written to the event would compile to
// with the triggers and synthetic events histd has (the first program it
// rebuilds, in "output"), changing nothing (engine::Engine::preview).
//            "denied": true}                 (the peer may not use the socket)
// A request with "raw": true (histd-exporter's) gets a successful reply's
// output as bytes after the reply: {"ok": true, "raw": N}, then a frame of N
// bytes. A 100k-series scrape is megabytes of text that histd then does
// not escape into JSON nor the exporter parse out of it.
// A raw request that also says "fd": true (histd-exporter's) gets the
// output in a sealed memfd passed with the reply frame (SCM_RIGHTS):
// {"ok": true, "raw": N, "fd": true}, nothing after it. The text is then
// copied once, into the memfd, and the exporter hands it to the kernel
// (sendfile) without reading it. Without a memfd to be had, the bytes
// follow the frame as for "raw" alone.
// histd drops a client that has not sent its whole request within 5 s, or
// not read its whole reply within 10 s (control::ServerLimits).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "histd/fd.h"
#include "histd/result.h"

namespace histd::control {

inline constexpr size_t kMaxFrame = 16 << 20;
inline constexpr size_t kFrameHeader = 4;
inline constexpr size_t kMaxRawFrame = 256 << 20;

// Blocking I/O of one frame (histctl's side).
Status write_frame(int fd, const nlohmann::json& message);
Expected<nlohmann::json> read_frame(int fd);

// The pieces of a frame, for callers that do their own I/O (histd's side,
// under deadlines). A message's frame: header and body; bytes that are not
// UTF-8 are replaced with U+FFFD.
std::string encode_frame(const nlohmann::json& message);
// The body length a header announces: EMSGSIZE past kMaxFrame.
Expected<uint32_t> frame_length(const unsigned char (&header)[kFrameHeader]);
// A body as a request or reply object: EINVAL when it is not one.
Expected<nlohmann::json> decode_body(const std::string& body);

// histd's side of "raw": moves a successful reply's output out of it,
// leaving its size as "raw". Nullopt, the reply untouched, when the request
// did not ask for it or the reply carries no output.
std::optional<std::string> take_raw_output(const nlohmann::json& request, nlohmann::json& reply);
// A frame's header for `size` bytes.
std::string frame_header(size_t size);
// The client's side: the bytes a reply with "raw" announces, read from `fd`
// (blocking); the reply's own "output" when it has no "raw".
Expected<std::string> read_output(int fd, nlohmann::json& reply);

// histd's side of "fd": whether the request asks for it, and a sealed
// memfd holding `bytes` (none when it cannot be made).
bool wants_fd(const nlohmann::json& request);
Fd output_memfd(std::string_view bytes);
// The client's side: a reply frame as read_frame(), and the descriptor
// that came with it in `passed` (none: an empty Fd).
Expected<nlohmann::json> read_frame_with_fd(int fd, Fd& passed);

// Splits "system:event"; nullopt when malformed.
std::optional<std::pair<std::string, std::string>> split_event(const std::string& event);

// A metrics request's command "folded:ID" asks for the folded stacks of the
// page's table ID (render::folded_table); a table that is not there is
// refused with kNoStackTable, which histd-exporter answers with 404.
inline constexpr std::string_view kFoldedPrefix = "folded:";
inline constexpr std::string_view kNoStackTable = "no table keyed by a stack has the id";

}  // namespace histd::control
