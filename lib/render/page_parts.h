// SPDX-License-Identifier: GPL-2.0-only
// The parts of render::page (docs/metrics.md, "The page"), one file each:
// the bar charts (chart.cpp), the latency heatmaps (heatmap.cpp), the flame
// graphs (flamegraph.cpp), put together by page.cpp. Private to lib/render.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "histd/render.h"
#include "histd/table.h"

namespace histd::render {

// Text as HTML shows it, in content and in quoted attributes alike.
std::string html(std::string_view raw);

// A histogram key's bucket as its bounds read: "5-8", or "3" for a bucket of one value.
std::string range_text(const table::KeyColumn& key, uint64_t bucket);

// An SVG bar chart per label set of the table's other keys, most hits first.
std::string charts_html(const table::Table& table, size_t hist_key, const Resolver& resolver,
                        const PageOptions& options);

// The latency heatmap of a histogram table's history: a cell per bucket
// and interval that had hits, its count in its <title>.
std::string heatmap_html(const table::KeyColumn& key, const TableHistory& history);

// A stack-keyed table's distinct stacks, frames root first ("?" for one
// the resolver cannot name), and their hits summed over the other keys
// (folded.cpp): what the folded text and the flame graph are made of.
using Stacks = std::map<std::vector<std::string>, uint64_t>;
Stacks stacks_of(const table::Table& table, const Resolver& resolver);

// The flame graph of a stack-keyed table (flamegraph.cpp): a <figure> with
// an SVG box per frame, a link to its folded stacks, and the search box
// and zoom reset that page_script() shows and drives.
std::string flamegraph_html(const readout::HistTable& table, const Resolver& resolver);

}  // namespace histd::render
