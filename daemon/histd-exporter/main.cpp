// SPDX-License-Identifier: GPL-2.0-only
// histd-exporter: histd's tables as Prometheus metrics and a page over HTTP
// (docs/metrics.md). histd runs it (histd --metrics-listen ADDR:PORT) as a
// user of its own, with no capabilities, and hands it what it needs as
// descriptors: the listening socket (--listen-fd), histd's metrics socket
// (--socket-fd, opened O_PATH: reached whatever the modes of the directories
// around it), the end of a pipe that closes when histd stops (--stop-fd).
// The metrics socket answers the metrics op and nothing else.
// libmicrohttpd serves HTTP: one polling thread per pool worker (epoll), so
// a client that stalls holds no thread; Guard (guard.h) keeps clients from
// starving a scrape.
//   GET /metrics   the text format 0.0.4, or OpenMetrics 1.0 when the
//                  scraper's Accept header asks for application/openmetrics-text;
//                  gzipped when Accept-Encoding allows it (so is the page)
//   GET /          every table as an HTML page with bar charts (render::page),
//                  which loads nothing and reloads itself; served with a
//                  Content-Security-Policy that allows inline styles and
//                  the page's script (by its hash) only;
//                  /?scale=log draws the charts' y axes on a log scale;
//                  a stack-keyed table has a flame graph, whose one script
//                  the policy allows by its SHA-256
//   GET /folded?table=ID  a stack-keyed table's folded stacks (text/plain),
//                  as flamegraph.pl and inferno read them
// HEAD as GET; other paths 404, other methods 405, a request body 413.
#include <malloc.h>
#include <microhttpd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "control/protocol.h"
#include "histd-exporter/encoding.h"
#include "histd-exporter/guard.h"
#include "histd/digest.h"
#include "histd/render.h"

namespace {

using histd::exporter::Guard;

constexpr const char* kTextType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kOpenMetricsType = "application/openmetrics-text; version=1.0.0; charset=utf-8";
constexpr const char* kHtmlType = "text/html; charset=utf-8";
constexpr const char* kPlainType = "text/plain; charset=utf-8";
// The page has inline styles, inline SVG and one script, the flame graphs'
// (render::page_script), allowed by its hash alone: no other script, no
// image, no frame, no form, no fetch. base-uri, form-action and
// frame-ancestors do not fall back to default-src, so they are named. Made
// once, at the first page, from the script this binary carries.
const std::string& page_policy() {
  static const std::string policy = fmt::format(
      "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{}'; base-uri 'none'; form-action 'none'; "
      "frame-ancestors 'none'",
      histd::sha256_base64(histd::render::page_script()));
  return policy;
}
constexpr const char* kPaths =
    "histd-exporter: GET /metrics (Prometheus), GET / (the page), GET /folded?table=ID (a table's folded stacks)\n";
// Connections MHD itself takes at most (divided among the pool's threads):
// above Guard's cap, which closes the idlest to make room well before.
constexpr unsigned kMhdConnectionLimit = 2048;
constexpr unsigned kPoolThreads = 4;
// Smaller bodies go as they are: gzip's header and a tiny body's deflate
// gain less than the work costs.
constexpr size_t kGzipFrom = 1024;

// The headers every response has; then queued, and released.
MHD_Result queue(MHD_Connection* c, unsigned status, MHD_Response* r, const char* type, bool compressible,
                 bool gzipped) {
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  if (compressible) MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
  if (gzipped) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  if (std::strcmp(type, kHtmlType) == 0) MHD_add_response_header(r, "Content-Security-Policy", page_policy().c_str());
  const MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

// Whether a body of `size` bytes goes gzipped: the client asks for it
// (Accept-Encoding) and it is big enough to gain.
bool gzips(MHD_Connection* c, size_t size) {
  const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
  return size >= kGzipFrom && accept && histd::exporter::accepts_gzip(accept);
}

// The response owns the body (a 100k-series scrape is megabytes: no copy).
MHD_Response* owning(std::string body) {
  auto* owned = new std::string(std::move(body));
  MHD_Response* r = MHD_create_response_from_buffer_with_free_callback_cls(
      owned->size(), owned->data(), [](void* cls) { delete static_cast<std::string*>(cls); }, owned);
  if (!r) delete owned;
  return r;
}

// `compressible`: gzip it when the client asks and it is big enough.
MHD_Result reply(MHD_Connection* c, unsigned status, std::string body, const char* type, bool compressible = false) {
  bool gzipped = false;
  if (compressible && gzips(c, body.size())) {
    if (std::optional<std::string> packed = histd::exporter::gzip(body)) {
      body = std::move(*packed);
      gzipped = true;
    }
  }
  return queue(c, status, owning(std::move(body)), type, compressible, gzipped);
}

// histd's answer, 200: its memfd handed to the kernel as it is (sendfile:
// the exporter never reads the text), or gzipped from it; or the text.
MHD_Result reply_ok(MHD_Connection* c, Guard::Answer answer, const char* type) {
  if (!answer.body) return reply(c, MHD_HTTP_OK, std::move(answer.text), type, true);
  if (gzips(c, answer.size)) {
    if (std::optional<std::string> packed = histd::exporter::gzip_file(answer.body.get(), answer.size))
      return queue(c, MHD_HTTP_OK, owning(std::move(*packed)), type, true, true);
  }
  MHD_Response* r = MHD_create_response_from_fd(answer.size, answer.body.get());
  if (r) answer.body.release();  // the response closes it
  return queue(c, MHD_HTTP_OK, r, type, true, false);
}

// GET /folded?table=ID: the folded stacks of the page's table ID, which the
// page links to. An id is 8 hex digits (render::table_id): anything else,
// or a table that is gone, is 404.
MHD_Result folded(Guard& guard, MHD_Connection* c) {
  const char* id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "table");
  const bool well_formed = id && std::strlen(id) == 8 && std::strspn(id, "0123456789abcdef") == 8;
  const std::string no_table =
      fmt::format("histd-exporter: {} '{}'\n", histd::control::kNoStackTable, well_formed ? id : "");
  if (!well_formed) return reply(c, MHD_HTTP_NOT_FOUND, no_table, kPlainType);
  std::string error;
  Guard::Answer answer = guard.ask_histd((std::string(histd::control::kFoldedPrefix) + id).c_str(), error);
  if (error.starts_with(histd::control::kNoStackTable)) return reply(c, MHD_HTTP_NOT_FOUND, no_table, kPlainType);
  if (!error.empty()) return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "histd-exporter: " + error + "\n", kPlainType);
  return reply_ok(c, std::move(answer), kPlainType);
}

// The answer to a request without a body: the metrics, the page, or why not.
MHD_Result respond(Guard& guard, MHD_Connection* c, const char* url, const char* method) {
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, kPaths, kPlainType);
  if (std::strcmp(url, "/folded") == 0) return folded(guard, c);
  if (std::strcmp(url, "/") != 0 && std::strcmp(url, "/metrics") != 0)
    return reply(c, MHD_HTTP_NOT_FOUND, kPaths, kPlainType);
  const bool page = std::strcmp(url, "/") == 0;
  const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
  const bool openmetrics = !page && accept && std::strstr(accept, "application/openmetrics-text");
  std::string error;
  // The page's y scale, from its address (/?scale=log): anything else is linear.
  const char* scale = page ? MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "scale") : nullptr;
  const char* page_form = scale && std::strcmp(scale, "log") == 0 ? "html-log" : "html";
  Guard::Answer answer = guard.ask_histd(page ? page_form : openmetrics ? "openmetrics" : "prometheus", error);
  if (!error.empty()) return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "histd-exporter: " + error + "\n", kPlainType);
  return reply_ok(c, std::move(answer), page ? kHtmlType : openmetrics ? kOpenMetricsType : kTextType);
}

// A request that brings a body is refused at its first call (its headers
// whole), and its connection closed: the body is never read. Any other is
// answered at the second call, which libmicrohttpd makes once it knows no
// body follows: a response queued at the first call makes it close the
// connection after it, and scrapers then pay a new connection every time.
MHD_Result answer(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                  size_t* upload_size, void** request) {
  Guard& guard = *static_cast<Guard*>(cls);
  if (*request) {
    *upload_size = 0;
    const MHD_Result rc = respond(guard, c, url, method);
    guard.responding(c);
    return rc;
  }
  *request = c;
  guard.handling(c);
  const char* length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if ((length && std::strcmp(length, "0") != 0) ||
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
    const MHD_Result rc = reply(c, MHD_HTTP_CONTENT_TOO_LARGE, "histd-exporter: requests have no body\n", kPlainType);
    guard.responding(c);
    return rc;
  }
  return MHD_YES;
}

MHD_Result admit(void* cls, const sockaddr*, socklen_t) { return static_cast<Guard*>(cls)->admit() ? MHD_YES : MHD_NO; }

void notify(void* cls, MHD_Connection* c, void** socket_context, MHD_ConnectionNotificationCode code) {
  Guard& guard = *static_cast<Guard*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED)
    guard.opened(c, socket_context);
  else
    guard.closed(*socket_context);
}

void completed(void* cls, MHD_Connection* c, void**, MHD_RequestTerminationCode) {
  static_cast<Guard*>(cls)->completed(c);
}

void mhd_log(void* cls, const char* format, va_list ap) {
  char line[512];
  std::vsnprintf(line, sizeof line, format, ap);
  static_cast<Guard*>(cls)->library_message(format, line);
}

// Thousands of connections need as many descriptors: the soft limit up to
// the hard one (the unit's LimitNOFILE).
void raise_descriptor_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = std::min<rlim_t>(r.rlim_max, 8192);
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// libmicrohttpd on histd's listening socket: a small pool of epoll threads,
// every callback through `guard`.
MHD_Daemon* serve_http(int listen_fd, Guard& guard) {
  return MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, &admit, &guard, &answer, &guard,
      // First: libmicrohttpd logs options given before it its own way.
      MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, &guard, MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_THREAD_POOL_SIZE,
      kPoolThreads, MHD_OPTION_CONNECTION_LIMIT, kMhdConnectionLimit, MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned>(std::chrono::duration_cast<std::chrono::seconds>(guard.limits().keep_alive).count()),
      MHD_OPTION_NOTIFY_CONNECTION, &notify, &guard, MHD_OPTION_NOTIFY_COMPLETED, &completed, &guard, MHD_OPTION_END);
}

}  // namespace

int main(int argc, char** argv) {
  // Run from a descriptor, the process would be named by its number.
  prctl(PR_SET_NAME, "histd-exporter");
  // Not dumpable: another process of the same user may not take its
  // descriptors (pidfd_getfd), trace it or read its memory.
  prctl(PR_SET_DUMPABLE, 0);
  CLI::App app{
      "histd-exporter: histd's tables as Prometheus metrics and a page over HTTP (run by histd --metrics-listen)"};
  int listen_fd = -1, stop_fd = -1, socket_fd = -1;
  std::string socket;
  app.add_option("--listen-fd", listen_fd, "the listening TCP socket histd bound")->required();
  app.add_option("--stop-fd", stop_fd, "a pipe whose end (histd closing it) ends the exporter");
  auto* by_fd = app.add_option("--socket-fd", socket_fd, "histd's metrics socket, opened O_PATH");
  app.add_option("--socket", socket, "histd's metrics socket, by path")->excludes(by_fd);
  CLI11_PARSE(app, argc, argv);
  if (socket_fd >= 0) socket = fmt::format("/proc/self/fd/{}", socket_fd);
  if (socket.empty()) {
    fmt::print(stderr, "histd-exporter: --socket-fd or --socket is needed\n");
    return 2;
  }
  // SIGTERM (histd stopping it, or histd's own end) is waited for below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);
  raise_descriptor_limit();
  // A scrape's body is megabytes, made and freed per request on one of the
  // pool's threads. glibc raises its mmap threshold after such a free, so
  // later bodies would come from per-thread heaps that keep the pages: a
  // fixed threshold gives every body back to the kernel when it is sent.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  page_policy();  // hashes the page's script now, not while a request waits
  Guard guard(socket, histd::exporter::ConnectionLimits{});
  MHD_Daemon* d = serve_http(listen_fd, guard);
  if (!d) {
    fmt::print(stderr, "histd-exporter: cannot serve HTTP on fd {}\n", listen_fd);
    return 1;
  }
  guard.start();
  // histd closing the stop pipe (its shutdown) ends the exporter as SIGTERM does.
  if (stop_fd >= 0)
    std::thread([stop_fd] {
      char c;
      while (read(stop_fd, &c, 1) > 0 || errno == EINTR) {
      }
      kill(getpid(), SIGTERM);
    }).detach();
  int sig = 0;
  sigwait(&stop, &sig);
  MHD_stop_daemon(d);
  guard.stop();
  return 0;
}
