// SPDX-License-Identifier: GPL-2.0-only
// The page's flame graph of a stack-keyed table (render::page,
// docs/metrics.md "The page"), as Brendan Gregg draws them: a box per
// frame, its width the frame's share of the table's hits, its callers
// below it and the root ("all") at the bottom, children in name order.
// Each box is a nested <svg>, which clips its text to the box; its <rect>
// holds a <title> with the frame's hits. It reads as it is with scripts
// off; page_script() adds zoom on click and a search that highlights.
#include <fmt/format.h>

#include <tuple>

#include "render/labels.h"
#include "render/page_parts.h"

namespace histd::render {

namespace {

// The viewBox's width, scaled to the page's (kScript's W).
constexpr double kWidth = 1200;
constexpr int kRow = 17, kBoxHeight = 16;
// Boxes narrower than this (view units) are not drawn, nor their callees:
// unreadable, and a table of thousands of stacks would be megabytes.
constexpr double kMinWidth = 0.3;
constexpr size_t kMaxBoxes = 3000;

struct Node {
  std::string name;
  uint64_t hits = 0;
  size_t depth = 0;
  std::map<std::string, size_t> kids;  // by name, as flamegraph.pl orders them
};

std::vector<Node> tree_of(const Stacks& stacks) {
  std::vector<Node> nodes(1);
  nodes[0].name = "all";
  for (const auto& [frames, hits] : stacks) {
    size_t at = 0;
    nodes[0].hits += hits;
    for (const std::string& f : frames) {
      auto it = nodes[at].kids.find(f);
      size_t next = it == nodes[at].kids.end() ? nodes.size() : it->second;
      if (next == nodes.size()) {
        nodes[at].kids.emplace(f, next);
        nodes.push_back({f, 0, nodes[at].depth + 1, {}});
      }
      nodes[next].hits += hits;
      at = next;
    }
  }
  return nodes;
}

struct Box {
  size_t node;
  double x, width;
  long parent;  // index of the caller's box; -1 for the root
};

// Depth first, callers before callees, so that a box's caller is drawn
// (and numbered) before it. `left_out` counts the subtrees not drawn.
std::vector<Box> layout(const std::vector<Node>& nodes, size_t& left_out) {
  std::vector<Box> boxes;
  const double scale = kWidth / static_cast<double>(nodes[0].hits);
  std::vector<std::tuple<size_t, double, long>> todo{{0, 0.0, -1}};
  while (!todo.empty()) {
    const auto [n, x, parent] = todo.back();
    todo.pop_back();
    const double width = static_cast<double>(nodes[n].hits) * scale;
    if (width < kMinWidth || boxes.size() >= kMaxBoxes) {
      ++left_out;
      continue;
    }
    const long me = static_cast<long>(boxes.size());
    boxes.push_back({n, x, width, parent});
    std::vector<std::tuple<size_t, double, long>> kids;
    double at = x;
    for (const auto& [name, k] : nodes[n].kids) {
      kids.emplace_back(k, at, me);
      at += static_cast<double>(nodes[k].hits) * scale;
    }
    todo.insert(todo.end(), kids.rbegin(), kids.rend());
  }
  return boxes;
}

// flamegraph.pl's "hot" palette, picked by the function's name (without
// its offset), so a function keeps its colour across reloads and tables.
std::string colour_of(const std::string& frame) {
  const uint32_t h = fnv1a32(frame.substr(0, frame.find('+')));
  const double a = (h & 0xff) / 255.0, b = ((h >> 8) & 0xff) / 255.0, c = ((h >> 16) & 0xff) / 255.0;
  return fmt::format("#{:02x}{:02x}{:02x}", static_cast<int>(205 + 50 * c), static_cast<int>(230 * a),
                     static_cast<int>(55 * b));
}

std::string box_svg(const Node& node, const Box& box, uint64_t total, int height) {
  const std::string name = html(node.name);
  const int y = height - static_cast<int>(node.depth + 1) * kRow;
  const std::string x = fmt::format("{:.2f}", box.x), w = fmt::format("{:.2f}", box.width);
  return fmt::format(
      "<svg class=\"fr\" x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{3}\" data-x=\"{0}\" data-w=\"{2}\" "
      "data-d=\"{4}\" data-p=\"{5}\"><rect width=\"100%\" height=\"100%\" fill=\"{6}\"><title>{7} ({8} hits, "
      "{9:.2f}%)</title></rect><text x=\"3\" y=\"12\">{7}</text></svg>\n",
      x, y, w, kBoxHeight, node.depth, box.parent, colour_of(node.name), name, node.hits,
      100.0 * static_cast<double>(node.hits) / static_cast<double>(total));
}

// The page's script. Zoom: a click on a box makes it the graph's full width, its callees
// scaled with it, its callers full width below, the rest hidden; the root
// or the button resets. Search: frames whose name holds the text turn
// magenta. Both survive the page's reload (sessionStorage, per table id).
constexpr std::string_view kScript = R"JS(
(function () {
  'use strict';
  var W = 1200;
  function num(b, k) { return +b.getAttribute('data-' + k); }
  document.querySelectorAll('figure.flame').forEach(function (fig) {
    var boxes = [].slice.call(fig.querySelectorAll('svg.fr'));
    var tools = fig.querySelector('.fg-tools');
    if (!boxes.length || !tools) return;
    var q = tools.querySelector('input'), reset = tools.querySelector('button');
    var found = tools.querySelector('.found'), key = 'histd:' + fig.id, state = {};
    try { state = JSON.parse(sessionStorage.getItem(key)) || {}; } catch (e) { state = {}; }
    function save() { try { sessionStorage.setItem(key, JSON.stringify(state)); } catch (e) { } }
    function name(b) { return b.querySelector('text').textContent; }
    function path(b) {
      var p = [];
      for (; b; b = boxes[num(b, 'p')]) p.unshift(name(b));
      return p.join(';');
    }
    function zoom(z) {
      var zx = num(z, 'x'), zw = num(z, 'w'), zd = num(z, 'd'), e = 0.02;
      boxes.forEach(function (b) {
        var x = num(b, 'x'), w = num(b, 'w'), d = num(b, 'd');
        var under = d >= zd && x >= zx - e && x + w <= zx + zw + e;
        var over = d < zd && x <= zx + e && x + w >= zx + zw - e;
        b.style.display = under || over ? '' : 'none';
        // The root: back to the page's own numbers, not a rounded rescale.
        b.setAttribute('x', zd === 0 ? b.getAttribute('data-x') : under ? (x - zx) / zw * W : 0);
        b.setAttribute('width', zd === 0 ? b.getAttribute('data-w') : under ? w / zw * W : W);
      });
      reset.hidden = zd === 0;
      state.zoom = zd === 0 ? '' : path(z);
      save();
    }
    function search(s) {
      var n = 0;
      boxes.forEach(function (b) {
        var m = s !== '' && name(b).indexOf(s) >= 0;
        b.classList.toggle('match', m);
        if (m) n++;
      });
      found.textContent = s === '' ? '' : n + (n === 1 ? ' frame matches' : ' frames match');
      state.search = s;
      save();
    }
    boxes.forEach(function (b) { b.addEventListener('click', function () { zoom(b); }); });
    reset.addEventListener('click', function () { zoom(boxes[0]); });
    q.addEventListener('input', function () { search(q.value); });
    tools.hidden = false;
    if (state.zoom) boxes.forEach(function (b) { if (path(b) === state.zoom) zoom(b); });
    if (state.search) { q.value = state.search; search(state.search); }
  });
})();
)JS";

}  // namespace

std::string flamegraph_html(const readout::HistTable& t, const Resolver& res) {
  const Stacks stacks = stacks_of(t.table, res);
  const std::vector<Node> nodes = tree_of(stacks);
  const std::string id = table_id(t.plan);
  std::string out = fmt::format(
      "<figure class=\"flame\" id=\"flame-{0}\">\n<figcaption>{1}: flame graph, {2} stacks, {3} hits &middot; "
      "<a href=\"folded?table={0}\">folded stacks</a></figcaption>\n",
      id, html(t.table.keys[*stack_key(t.table)].name), stacks.size(), nodes[0].hits);
  if (nodes[0].hits == 0) return out + "<p class=\"note\">No stack has a frame yet.</p>\n</figure>\n";
  size_t left_out = 0;
  const std::vector<Box> boxes = layout(nodes, left_out);
  size_t depth = 0;
  for (const Box& b : boxes) depth = std::max(depth, nodes[b.node].depth);
  const int height = static_cast<int>(depth + 1) * kRow;
  // Shown by page_script(): without it they could do nothing.
  out +=
      "<p class=\"fg-tools\" hidden><input type=\"search\" placeholder=\"search frames\" aria-label=\"search "
      "frames\"> <button type=\"button\" hidden>reset zoom</button> <span class=\"found\"></span></p>\n";
  out += fmt::format("<svg class=\"fg\" viewBox=\"0 0 {} {}\" role=\"img\">\n", kWidth, height);
  for (const Box& b : boxes) out += box_svg(nodes[b.node], b, nodes[0].hits, height);
  out += "</svg>\n";
  if (left_out)
    out += fmt::format("<p class=\"note\">{} narrow call paths not drawn: the folded stacks have every one.</p>\n",
                       left_out);
  return out + "</figure>\n";
}

std::string_view page_script() { return kScript; }

}  // namespace histd::render
