// Leader election against a real kube-apiserver: electors in this process (short settings, for
// the protocol's logic) and lease_contender processes (real 15/10/2 s settings, for takeover
// after a crash and handover on SIGTERM).
#include "kube/leader_election.h"

#include <gtest/gtest.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): kill
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "common/rfc3339.h"
#include "control_plane.h"
#include "eventually.h"
#include "kube/client.h"
#include "kube/credentials.h"
#include "kube/transport.h"

namespace eoc::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using testing::ControlPlane;
using testing::UniqueName;

#define ASSERT_OK(r) ASSERT_TRUE(r) << (r).error().ToString()

constexpr const char* kLease = "eoc-leader";

using eoc::testing::Eventually;

double Seconds(steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Fixed1(double value) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f", value);
  return text.data();
}

// A transport that a test can unplug: the real one while plugged, a connection failure while not.
class UnpluggableTransport final : public Transport {
 public:
  explicit UnpluggableTransport(std::unique_ptr<Transport> real) : real_(std::move(real)) {}
  void set_plugged(bool plugged) { plugged_ = plugged; }
  HttpResponse Send(const HttpRequest& request) override {
    Check();
    return real_->Send(request);
  }
  StreamResult Stream(const HttpRequest& request, milliseconds idle) override {
    Check();
    return real_->Stream(request, idle);
  }

 private:
  void Check() const {
    if (!plugged_) throw TransportError(kReasonTransport, "unplugged by the test");
  }
  std::unique_ptr<Transport> real_;
  std::atomic<bool> plugged_{true};
};

// Counts callbacks, from the elector's thread.
struct Transitions {
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::mutex mu;
  std::vector<std::string> leaders;

  LeaderCallbacks Callbacks() {
    return {.on_started_leading = [this] { ++started; },
            .on_stopped_leading = [this] { ++stopped; },
            .on_new_leader =
                [this](const std::string& id) {
                  const std::lock_guard lock(mu);
                  leaders.push_back(id);
                }};
  }
  bool SawLeader(const std::string& id) {
    const std::lock_guard lock(mu);
    return std::find(leaders.begin(), leaders.end(), id) != leaders.end();
  }
};

// A lease_contender process; its stdout lines say when it leads ("LEADING <identity>"), whom it
// sees lead ("LEADER <identity>"), and when it stops.
class Contender : public eoc::testing::ChildProcess {
 public:
  Contender(const std::vector<std::string>& args, std::string identity)
      : ChildProcess(Argv(args)), identity_(std::move(identity)) {}
  const std::string& identity() const { return identity_; }

 private:
  static std::vector<std::string> Argv(const std::vector<std::string>& args) {
    std::vector<std::string> all = {EOC_LEASE_CONTENDER};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  std::string identity_;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plane_ = ControlPlane::Find();
    if (plane_ == nullptr) GTEST_SKIP() << "EOC_KUBE_ENV is not set: no control plane";
    client_ = Client::Create(plane_->AdminConfig(), {});
    ns_ = UniqueName("le");
    ASSERT_OK(client_->Create(resources::kNamespaces, "", json{{"metadata", {{"name", ns_}}}}));
  }

  void TearDown() override {
    if (client_ && !ns_.empty()) (void)client_->Delete(resources::kNamespaces, "", ns_);
  }

  // Short settings, for tests of the protocol's logic rather than its timing.
  LeaderElectionConfig Short(const std::string& identity) const {
    return {.lease_namespace = ns_,
            .lease_name = kLease,
            .identity = identity,
            .lease_duration = seconds(3),
            .renew_deadline = seconds(2),
            .retry_period = milliseconds(500)};
  }

  json Lease() const {
    auto lease = client_->Get(resources::kLeases, ns_, kLease);
    return lease ? *lease : json();
  }

  std::string Holder() const { return ParseLeaseRecord(Lease()).holder_identity; }

  std::unique_ptr<Contender> StartContender(const std::string& name) const {
    const std::string identity = ns_ + "-" + name;
    return std::make_unique<Contender>(
        std::vector<std::string>{"--kubeconfig", plane_->Var("EOC_KUBECONFIG"), "--namespace", ns_,
                                 "--lease", kLease, "--identity", identity, "--lease-duration",
                                 "15", "--renew-deadline", "10", "--retry-period", "2"},
        identity);
  }

  const ControlPlane* plane_ = nullptr;
  std::unique_ptr<Client> client_;
  std::string ns_;
};

TEST_F(LeaderElectionTest, WritesTheLeaseAsClientGoDoes) {
  Transitions seen;
  LeaderElector elector(*client_, Short("alpha"), seen.Callbacks());
  elector.Start();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }, seconds(10)));
  EXPECT_TRUE(seen.SawLeader("alpha"));

  const json first = Lease();
  const LeaseRecord created = ParseLeaseRecord(first);
  EXPECT_EQ(created.holder_identity, "alpha");
  EXPECT_EQ(created.lease_duration_seconds, 3);
  EXPECT_EQ(created.lease_transitions, 0);
  const std::regex micro_time(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(created.acquire_time, micro_time)) << created.acquire_time;
  EXPECT_TRUE(std::regex_match(created.renew_time, micro_time)) << created.renew_time;

  // The holder renews every retry period: renewTime moves, acquireTime stays.
  ASSERT_TRUE(Eventually([&] { return ParseLeaseRecord(Lease()).renew_time != created.renew_time; },
                         seconds(5)));
  const LeaseRecord renewed = ParseLeaseRecord(Lease());
  EXPECT_EQ(renewed.holder_identity, "alpha");
  EXPECT_EQ(renewed.acquire_time, created.acquire_time);
  EXPECT_EQ(renewed.lease_transitions, 0);

  // A clean stop ends leadership, then hands the Lease back.
  elector.Stop();
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_EQ(seen.started, 1);
  EXPECT_EQ(seen.stopped, 1);
  const LeaseRecord released = ParseLeaseRecord(Lease());
  EXPECT_EQ(released.holder_identity, "");
  EXPECT_EQ(released.lease_duration_seconds, 1);
  EXPECT_EQ(released.lease_transitions, 0);
  EXPECT_NE(released.renew_time, renewed.renew_time);
}

TEST_F(LeaderElectionTest, OnlyOneOfThreeLeads) {
  std::array<Transitions, 3> seen;
  std::vector<std::unique_ptr<LeaderElector>> electors;
  electors.reserve(seen.size());
  for (int i = 0; i < 3; ++i) {
    electors.push_back(std::make_unique<LeaderElector>(
        *client_, Short("candidate-" + std::to_string(i)), seen.at(i).Callbacks()));
  }
  for (auto& e : electors) e->Start();
  const auto leaders = [&] {
    return std::count_if(electors.begin(), electors.end(), [](auto& e) { return e->IsLeader(); });
  };
  ASSERT_TRUE(Eventually([&] { return leaders() == 1; }, seconds(10)));
  // Sampled over several lease durations: never two at once, and no change of leader.
  const auto until = steady_clock::now() + seconds(8);
  while (steady_clock::now() < until) {
    ASSERT_LE(leaders(), 1);
    std::this_thread::sleep_for(milliseconds(20));
  }
  int started = 0;
  std::string leader;
  for (std::size_t i = 0; i < electors.size(); ++i) {
    started += seen.at(i).started;
    if (electors[i]->IsLeader()) leader = electors[i]->identity();
  }
  EXPECT_EQ(started, 1);
  EXPECT_EQ(Holder(), leader);
  for (auto& e : electors) EXPECT_EQ(e->Leader(), leader) << e->identity();
}

TEST_F(LeaderElectionTest, ReleaseLetsAFollowerLeadAtItsNextRetry) {
  // A lease long enough that, without the release, the follower would wait 30 s.
  LeaderElectionConfig config = Short("");
  config.lease_duration = seconds(30);
  config.renew_deadline = seconds(5);
  config.retry_period = seconds(1);
  config.identity = "first";
  Transitions first_seen;
  Transitions second_seen;
  LeaderElector first(*client_, config, first_seen.Callbacks());
  first.Start();
  ASSERT_TRUE(Eventually([&] { return first.IsLeader(); }, seconds(10)));
  config.identity = "second";
  LeaderElector second(*client_, config, second_seen.Callbacks());
  second.Start();
  ASSERT_TRUE(Eventually([&] { return second_seen.SawLeader("first"); }, seconds(10)));

  first.Stop();
  const auto released = steady_clock::now();
  // One retry period with jitter (at most 2.2 s) plus slack for the calls.
  ASSERT_TRUE(Eventually([&] { return second.IsLeader(); }, seconds(6))) << "holder: " << Holder();
  std::cout << "handover after release: " << Fixed1(Seconds(steady_clock::now() - released))
            << " s\n";
  EXPECT_EQ(Holder(), "second");
  EXPECT_EQ(ParseLeaseRecord(Lease()).lease_transitions, 1);
}

TEST_F(LeaderElectionTest, LosingTheLeaseStopsLeadingButNotTheElector) {
  Transitions seen;
  LeaderElector elector(*client_, Short("owner"), seen.Callbacks());
  elector.Start();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }, seconds(10)));

  // Someone else takes the Lease over (as a partitioned-away rival would), and never renews it.
  bool stolen = false;
  for (int attempt = 0; attempt < 20 && !stolen; ++attempt) {
    json lease = Lease();
    lease["spec"]["holderIdentity"] = "thief";
    lease["spec"]["leaseTransitions"] = ParseLeaseRecord(lease).lease_transitions + 1;
    lease["spec"]["renewTime"] = FormatRfc3339Micro(std::chrono::system_clock::now());
    stolen = client_->Update(resources::kLeases, ns_, lease).ok();  // 409 while the owner renews
  }
  ASSERT_TRUE(stolen);

  // The owner sees another holder at its next renewal and stops at once.
  ASSERT_TRUE(Eventually([&] { return seen.stopped == 1; }, seconds(3)));
  EXPECT_FALSE(elector.IsLeader());
  EXPECT_TRUE(seen.SawLeader("thief"));
  // It stays a candidate: once the thief's lease (3 s from when the owner saw it) runs out, the
  // owner takes it back.
  ASSERT_TRUE(Eventually([&] { return seen.started == 2; }, seconds(10)));
  EXPECT_TRUE(elector.IsLeader());
  const LeaseRecord record = ParseLeaseRecord(Lease());
  EXPECT_EQ(record.holder_identity, "owner");
  EXPECT_EQ(record.lease_transitions, 2);
}

TEST_F(LeaderElectionTest, UnreachableApiServerStopsLeadingWithinRenewDeadline) {
  auto config = plane_->AdminConfig();
  auto transport = std::make_unique<UnpluggableTransport>(
      MakeCpprestTransport(config, MakeCredentialSource(config, RealClock()), {}));
  UnpluggableTransport* cable = transport.get();
  Client client(std::move(transport), {}, RealClock());
  Transitions seen;
  LeaderElector elector(client, Short("cut-off"), seen.Callbacks());
  elector.Start();
  ASSERT_TRUE(Eventually([&] { return elector.IsLeader(); }, seconds(10)));

  cable->set_plugged(false);
  const auto cut = steady_clock::now();
  // renew_deadline (2 s) from the last renewal, which was before the cut; plus slack.
  ASSERT_TRUE(Eventually([&] { return seen.stopped == 1; }, seconds(4)));
  EXPECT_FALSE(elector.IsLeader());
  std::cout << "stopped leading " << Fixed1(Seconds(steady_clock::now() - cut))
            << " s after the API server became unreachable\n";

  // Back on the network, the Lease still names it: it leads again at its next try.
  cable->set_plugged(true);
  ASSERT_TRUE(Eventually([&] { return seen.started == 2; }, seconds(5)));
  EXPECT_TRUE(elector.IsLeader());
  EXPECT_EQ(Holder(), "cut-off");
}

TEST_F(LeaderElectionTest, ProcessesTakeOverAfterSigkillAndHandOverOnSigterm) {
  auto a = StartContender("a");
  auto b = StartContender("b");
  // Exactly one leads; the other sees it as the leader and stays a follower.
  Contender* leader = nullptr;
  ASSERT_TRUE(Eventually(
      [&] {
        for (Contender* c : {a.get(), b.get()}) {
          if (c->Count("LEADING " + c->identity()) > 0) leader = c;
        }
        return leader != nullptr;
      },
      seconds(30)))
      << "a:\n"
      << a->Output() << "b:\n"
      << b->Output();
  Contender* follower = leader == a.get() ? b.get() : a.get();
  ASSERT_TRUE(follower->WaitForLine("LEADER " + leader->identity(), seconds(10)))
      << follower->Output();
  std::this_thread::sleep_for(seconds(6));  // three retry periods
  EXPECT_EQ(follower->Count("LEADING " + follower->identity()), 0) << follower->Output();
  EXPECT_EQ(Holder(), leader->identity());

  // SIGKILL: no release, so the follower must wait out the lease from when it last saw a change.
  leader->Signal(SIGKILL);
  leader->Wait();
  const auto killed = steady_clock::now();
  const auto took_over = follower->WaitForLine("LEADING " + follower->identity(), seconds(40));
  ASSERT_TRUE(took_over) << follower->Output();
  const double takeover = Seconds(*took_over - killed);
  RecordProperty("takeover_after_sigkill_s", Fixed1(takeover));
  std::cout << "takeover after SIGKILL: " << Fixed1(takeover) << " s\n";
  EXPECT_EQ(Holder(), follower->identity());

  // A third joins, then the leader is stopped cleanly: it releases, the third leads at its next
  // retry.
  auto c = StartContender("c");
  ASSERT_TRUE(c->WaitForLine("LEADER " + follower->identity(), seconds(15))) << c->Output();
  follower->Signal(SIGTERM);
  const auto terminated = steady_clock::now();
  const auto handed_over = c->WaitForLine("LEADING " + c->identity(), seconds(10));
  ASSERT_TRUE(handed_over) << "c:\n" << c->Output() << "leader:\n" << follower->Output();
  const double handover = Seconds(*handed_over - terminated);
  RecordProperty("handover_after_sigterm_s", Fixed1(handover));
  std::cout << "handover after SIGTERM: " << Fixed1(handover) << " s\n";
  const int status = follower->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(follower->Count("STOPPED " + follower->identity()), 1) << follower->Output();
  EXPECT_EQ(follower->Count("EXITING " + follower->identity()), 1) << follower->Output();
  EXPECT_EQ(Holder(), c->identity());
  // Created by the first leader, then taken over twice.
  EXPECT_EQ(ParseLeaseRecord(Lease()).lease_transitions, 2);
}

}  // namespace
}  // namespace eoc::kube
