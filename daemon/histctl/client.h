// SPDX-License-Identifier: GPL-2.0-only
// histctl's side of the control socket: one request, its reply, and the exit
// codes histctl ends with (kExitStatus in main.cpp documents them).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace histd::histctl {

constexpr int kRefused = 1;
constexpr int kUnreachable = 2;
constexpr int kBadArguments = 2;
constexpr int kDenied = 3;

// The command with a caret under the byte at `caret`.
std::string caret_block(const std::string& command, size_t caret);

// Sends one request and returns the reply, or prints why not and sets `rc`
// to the exit code.
std::optional<nlohmann::json> request(const std::string& socket_path, const nlohmann::json& req, int& rc);

// An event's tables as hist.json's document (op "show" with json), or
// prints why not (histd's error, exit 1) and sets `rc`.
std::optional<nlohmann::json> show_json(const std::string& socket_path, const std::string& event, int& rc);

}  // namespace histd::histctl
