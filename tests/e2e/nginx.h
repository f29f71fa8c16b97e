// Debian's nginx running a shipped recipe (examples/nginx/, rendered by its render script) for the
// end-to-end tests, and the completion request a client sends through it.
//
//   eoc::testing::Nginx gateway("gateway-fail-closed.conf", {"PICKER=...", "POOL=ns/w",
//                               "LISTEN=127.0.0.1:" + std::to_string(port)}, port);
//   auto client = gateway.Connect();
//   client->Send(eoc::testing::Completion());
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.h"
#include "eventually.h"
#include "files.h"
#include "fleet_test.h"
#include "raw_client.h"

namespace eoc::testing {

// Debian's (scripts/bootstrap installs nginx-light).
inline constexpr const char* kNginx = "/usr/sbin/nginx";

// nginx running one rendered recipe; stopped (SIGTERM: its fast shutdown) when destroyed.
class Nginx {
 public:
  // Renders examples/nginx into a folder of its own with `placeholders`, lets `edit` change the
  // rendered folder (when given), and runs `recipe` from it.
  Nginx(const std::string& recipe, const std::vector<std::string>& placeholders, int port,
        const std::function<void(const std::string& dir)>& edit = {})
      : port_(port) {
    const std::string dir = dir_.Path("nginx");
    std::vector<std::string> render{EOC_SOURCE_DIR "/examples/nginx/render", dir};
    render.insert(render.end(), placeholders.begin(), placeholders.end());
    ChildProcess renderer(render, /*merge_stderr=*/true);
    const auto status = renderer.WaitFor(std::chrono::seconds(30));
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      throw std::runtime_error("render failed: " + renderer.Output());
    }
    if (edit) edit(dir);
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kNginx, "-p", dir, "-c", dir + "/" + recipe, "-g", "daemon off;"},
        /*merge_stderr=*/true);
  }
  ~Nginx() {
    process_->Signal(SIGTERM);
    (void)process_->WaitFor(std::chrono::seconds(30));
  }
  Nginx(const Nginx&) = delete;
  Nginx& operator=(const Nginx&) = delete;
  Nginx(Nginx&&) = delete;
  Nginx& operator=(Nginx&&) = delete;

  // A connection to it, once it listens.
  std::unique_ptr<RawClient> Connect() const {
    std::unique_ptr<RawClient> client;
    (void)Eventually(
        [&] {
          try {
            client = std::make_unique<RawClient>(static_cast<std::uint16_t>(port_));
            return true;
          } catch (const std::runtime_error&) {
            return false;
          }
        },
        kPatience);
    return client;
  }
  std::string Output() const { return process_->Output(); }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<ChildProcess> process_;
};

// A completion request as a client sends it through the gateway, with `headers` (a session, say).
inline std::string Completion(const std::string& headers = "") {
  const std::string body = R"({"model":"llama","prompt":"hi","max_tokens":1})";
  return "POST /v1/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n" +
         headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace eoc::testing
