// SPDX-License-Identifier: GPL-2.0-only
#include "fs/renderings.h"

namespace histd::fs {

Renderings::Renderings(const Namespace& ns, size_t cap)
    : ns_(&ns), cap_(cap), pinned_(std::make_shared<std::atomic<size_t>>(0)) {}

Text Renderings::share(std::string text) {
  // Counted at its capacity: what the heap holds for it.
  const size_t bytes = text.capacity();
  *pinned_ += bytes;
  return Text(new std::string(std::move(text)), [pinned = pinned_, bytes](const std::string* s) {
    *pinned -= bytes;
    delete s;
  });
}

Expected<Rendering> Renderings::open(const Node& n, const render::Options& options) {
  const auto engine = ns_->engine(n);
  if (!engine) return fail(ErrorKind::NotFound, ENOENT, "its instance was removed");
  const Key key{n.instance, n.system, n.event, n.file, options.hide_kernel_addresses};
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mu_);
    // Slots of files nobody has open (and nobody is opening) go.
    for (auto it = slots_.begin(); it != slots_.end();)
      it = it->second.use_count() == 1 && it->second->text.expired() ? slots_.erase(it) : std::next(it);
    auto& s = slots_[key];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard rendering(slot->rendering);
  // Read after waiting: a rendering that finished meanwhile is as new.
  const uint64_t version = engine->reads().version(n.system, n.event);
  if (Text text = slot->text.lock()) {
    if (slot->version == version || *pinned_ >= cap_) return Rendering{text, version};
  }
  // The row's renderer (hist: text, hist.json: JSON).
  std::string text;
  if (const int rc = n.row->read(FileCall{*ns_, *engine, n, options}, text); rc < 0)
    return fail(ErrorKind::System, -rc, "cannot read " + n.file);
  Text shared = share(std::move(text));
  slot->version = version;
  slot->text = shared;
  return Rendering{shared, version};
}

}  // namespace histd::fs
