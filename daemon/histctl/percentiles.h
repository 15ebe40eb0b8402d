// SPDX-License-Identifier: GPL-2.0-only
// histctl show --percentiles, and watch's percentile columns: which key of a
// hist.json table the percentiles are over, its entries as quantile rows,
// and the result as JSON and as text. Pure: hist.json-shaped values in
// (docs/histctl.md), values out.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "histd/quantile.h"
#include "histd/result.h"

namespace histd::histctl {

// The key a table's percentiles are over: its name in the entries' "keys",
// as the trigger writes it ("fd.log2", "fd.buckets=100", "lat"), and how it
// buckets values.
struct KeyChoice {
  std::string name;
  std::string written;
  quantile::Scale scale;
};

// Where to look for the key.
struct KeyRules {
  std::string wanted;         // --key: this key, whatever it is ("" : choose)
  bool plain_allowed = true;  // without --key, a lone plain numeric key will do (watch: only a bucket key)
};

// The key of `table` (one of hist.json's "tables"): `rules.wanted`, else the
// trigger's one .log2 or .buckets key, else (plain_allowed) its one key
// whose entries hold plain numbers (no modifier renders it). An error says
// why there is none ("no .log2, .buckets or numeric key ...") or that several
// fit (name one with --key).
Result<KeyChoice, std::string> choose_key(const nlohmann::json& table, const KeyRules& rules);

// The percentiles of `entries` ([{"keys", "values"}], as hist.json's, or an
// interval's deltas) over `key`, weighted by their values' hitcount:
// {"key": "fd.log2", "label_sets": [{"keys": {the other keys}, "hits": N,
//   "percentiles": [{"percentile": 99.9, "lower": L, "upper": U, "estimate": E, "exact": bool}]}]}
// An error when an entry's key is not a number, or the table has no hitcount.
Result<nlohmann::json, std::string> percentiles_json(const nlohmann::json& entries, const KeyChoice& key,
                                                     std::span<const quantile::Percentile> wanted);

// `show --percentiles --json`: the event's document with each table's
// percentiles (hist.json's "trigger" and "totals", and percentiles_json's
// members, or "error": why it has none):
// {"event", "percentiles": [50, 99.9], "tables": [...]}.
nlohmann::json event_percentiles(const nlohmann::json& doc, const KeyRules& rules,
                                 std::span<const quantile::Percentile> wanted);

// event_percentiles' document as text: per table its trigger line, then per
// label set its hits and one line per percentile, e.g.
//   p99    in [513, 1024]  ~ 870.4 (estimate within the bucket)
//   p50    = 4101 (exact)
// The tables' errors are not in it.
std::string percentiles_text(const nlohmann::json& result);

// One percentile's cell in watch's columns: "[513, 1024] ~870.4" or "=4101".
std::string percentile_cell(const nlohmann::json& percentile);

// An estimate as printed: at most one decimal, none when whole ("870.4", "8192").
std::string estimate_text(double estimate);

}  // namespace histd::histctl
