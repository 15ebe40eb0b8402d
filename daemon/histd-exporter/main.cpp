// histd-exporter: histd's tables as Prometheus metrics and a page over HTTP (issue 22,
// docs/metrics.md). histd runs it (histd --metrics-listen ADDR:PORT) as an
// unprivileged user, with no capabilities, on a listening socket histd
// bound (--listen-fd); it reads the tables through histd's metrics socket
// (--socket), which answers the metrics op and nothing else. libmicrohttpd
// serves HTTP: one polling thread (epoll) and a small pool, so a client that
// stalls holds no thread; connections are capped (in all and per address)
// and time out.
//   GET /metrics   the text format 0.0.4, or OpenMetrics 1.0 when the
//                  scraper's Accept header asks for application/openmetrics-text
//   GET /          every table as an HTML page with bar charts (render::page),
//                  which loads nothing and reloads itself; served with a
//                  Content-Security-Policy that allows inline styles only
// HEAD as GET; other paths 404, other methods 405.
#include <malloc.h>
#include <microhttpd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "control/protocol.h"
#include "histd/fd.h"

namespace {

constexpr const char* kTextType = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* kOpenMetricsType = "application/openmetrics-text; version=1.0.0; charset=utf-8";
constexpr const char* kHtmlType = "text/html; charset=utf-8";
// The page has inline styles and inline SVG, nothing else: no script, no
// image, no frame, no form, no fetch. base-uri, form-action and
// frame-ancestors do not fall back to default-src, so they are named.
constexpr const char* kPagePolicy =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
constexpr const char* kPaths = "histd-exporter: GET /metrics (Prometheus), GET / (the page)\n";
constexpr int kHistdTimeoutSeconds = 10;

struct Settings {
  std::string socket;
};

// The metrics from histd's metrics socket in `format` (prometheus,
// openmetrics, html); "" and `error` set when histd cannot be asked.
std::string ask_histd(const Settings& s, const char* format, std::string& error) {
  histd::Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (!fd || s.socket.size() >= sizeof(addr.sun_path)) {
    error = "no socket";
    return {};
  }
  std::memcpy(addr.sun_path, s.socket.c_str(), s.socket.size() + 1);
  timeval tv{kHistdTimeoutSeconds, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = fmt::format("histd's metrics socket {}: {}", s.socket, std::strerror(errno));
    return {};
  }
  auto sent = histd::control::write_frame(
      fd.get(), {{"op", "metrics"}, {"event", ""}, {"command", format}, {"raw", true}});
  if (!sent) {
    error = sent.error().context;
    return {};
  }
  auto reply = histd::control::read_frame(fd.get());
  if (!reply) {
    error = reply.error().context;
    return {};
  }
  if (!reply->value("ok", false)) {
    error = reply->value("error", std::string("histd refused"));
    return {};
  }
  auto output = histd::control::read_output(fd.get(), *reply);
  if (!output) {
    error = output.error().context;
    return {};
  }
  return std::move(*output);
}

// The response owns the body (a 100k-series scrape is megabytes: no copy).
MHD_Result reply(MHD_Connection* c, unsigned status, std::string body, const char* type) {
  auto* owned = new std::string(std::move(body));
  MHD_Response* r = MHD_create_response_from_buffer_with_free_callback_cls(
      owned->size(), owned->data(), [](void* cls) { delete static_cast<std::string*>(cls); }, owned);
  if (!r) {
    delete owned;
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  if (std::strcmp(type, kHtmlType) == 0) MHD_add_response_header(r, "Content-Security-Policy", kPagePolicy);
  const MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

MHD_Result answer(void* cls, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                  size_t* upload_size, void**) {
  const Settings& s = *static_cast<const Settings*>(cls);
  if (*upload_size != 0) {
    *upload_size = 0;  // a body is not read
    return MHD_YES;
  }
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, kPaths, "text/plain; charset=utf-8");
  const bool page = std::strcmp(url, "/") == 0;
  if (!page && std::strcmp(url, "/metrics") != 0)
    return reply(c, MHD_HTTP_NOT_FOUND, kPaths, "text/plain; charset=utf-8");
  const char* accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
  const bool openmetrics = !page && accept && std::strstr(accept, "application/openmetrics-text");
  std::string error;
  std::string text = ask_histd(s, page ? "html" : openmetrics ? "openmetrics" : "prometheus", error);
  if (!error.empty())
    return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "histd-exporter: " + error + "\n", "text/plain; charset=utf-8");
  return reply(c, MHD_HTTP_OK, std::move(text), page ? kHtmlType : openmetrics ? kOpenMetricsType : kTextType);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"histd-exporter: histd's tables as Prometheus metrics and a page over HTTP (run by histd --metrics-listen)"};
  Settings settings;
  int listen_fd = -1, stop_fd = -1;
  app.add_option("--listen-fd", listen_fd, "the listening TCP socket histd bound")->required();
  app.add_option("--stop-fd", stop_fd, "a pipe whose end (histd closing it) ends the exporter");
  app.add_option("--socket", settings.socket, "histd's metrics socket")->required();
  CLI11_PARSE(app, argc, argv);
  // SIGTERM (histd stopping it, or histd's own end) is waited for below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // A scrape's body is megabytes, made and freed per request on one of the
  // pool's threads. glibc raises its mmap threshold after such a free, so
  // later bodies would come from per-thread heaps that keep the pages: a
  // fixed threshold gives every body back to the kernel when it is sent.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  MHD_Daemon* d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &answer, &settings,
      MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_THREAD_POOL_SIZE, 4u, MHD_OPTION_CONNECTION_LIMIT, 64u,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (!d) {
    fmt::print(stderr, "histd-exporter: cannot serve HTTP on fd {}\n", listen_fd);
    return 1;
  }
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
  return 0;
}
