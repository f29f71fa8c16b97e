// SharedInformers' bookkeeping: one informer per key in use, made once for the first user,
// handed back when the last user names another key, none, or is forgotten. The informers are
// never started (a client over a scripted transport that is never called).
#include "kube/shared_informers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "fake_transport.h"
#include "kube/pod_view.h"

namespace eoc::kube {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class SharedInformersTest : public ::testing::Test {
 protected:
  using Watch = Informer<PodView>;

  // Use(), counting the informers made.
  Watch* Use(const std::string& user, const std::string& key, std::unique_ptr<Watch>& released) {
    return watches_.Use(
        user, key,
        [&] {
          ++made_;
          return std::make_unique<Watch>(*fake_.client,
                                         ReflectorOptions{.resource = resources::kPods, .ns = key},
                                         ToPodView, clock_);
        },
        released);
  }

  ManualClock clock_;
  testing::FakeClient fake_{clock_};
  SharedInformers<PodView> watches_;
  int made_ = 0;
};

TEST_F(SharedInformersTest, UsersShareAnInformerUntilTheLastLetsItGo) {
  std::unique_ptr<Watch> released;
  Watch* const dcgm = Use("prod/a", "dcgm", released);
  ASSERT_NE(dcgm, nullptr);
  EXPECT_EQ(Use("prod/b", "dcgm", released), dcgm);  // shared: made once
  EXPECT_EQ(released, nullptr);
  EXPECT_EQ(made_, 1);
  EXPECT_THAT(watches_.Users("dcgm"), ElementsAre("prod/a", "prod/b"));

  // a names another key: a second informer; b still reads the first.
  Watch* const kepler = Use("prod/a", "kepler", released);
  EXPECT_NE(kepler, dcgm);
  EXPECT_EQ(released, nullptr);
  EXPECT_EQ(watches_.size(), 2U);
  EXPECT_EQ(Use("prod/a", "kepler", released), kepler);  // the same key again: nothing moves
  EXPECT_EQ(made_, 2);

  // b follows: the first is handed back, no user reads it.
  EXPECT_EQ(Use("prod/b", "kepler", released), kepler);
  EXPECT_EQ(released.get(), dcgm);
  EXPECT_EQ(watches_.size(), 1U);
  EXPECT_THAT(watches_.Users("dcgm"), IsEmpty());

  // a names none; b is forgotten: the second is handed back then.
  EXPECT_EQ(Use("prod/a", "", released), nullptr);
  EXPECT_EQ(released, nullptr);
  EXPECT_THAT(watches_.Users("kepler"), ElementsAre("prod/b"));
  std::unique_ptr<Watch> last = watches_.Forget("prod/b");
  EXPECT_EQ(last.get(), kepler);
  EXPECT_EQ(watches_.size(), 0U);
  EXPECT_EQ(watches_.Forget("prod/b"), nullptr);    // forgetting twice is nothing
  EXPECT_EQ(Use("prod/c", "", released), nullptr);  // a user that never read one
  EXPECT_EQ(released, nullptr);

  // A key used again after it was handed back: made afresh.
  EXPECT_NE(Use("prod/a", "dcgm", released), nullptr);
  EXPECT_EQ(made_, 3);
}

TEST_F(SharedInformersTest, TakeAllHandsBackEveryInformerAndForgetsTheUsers) {
  std::unique_ptr<Watch> released;
  (void)Use("prod/a", "dcgm", released);
  (void)Use("prod/b", "kepler", released);
  const auto all = watches_.TakeAll();
  EXPECT_EQ(all.size(), 2U);
  EXPECT_EQ(watches_.size(), 0U);
  EXPECT_THAT(watches_.Users("dcgm"), IsEmpty());
  EXPECT_EQ(watches_.Forget("prod/a"), nullptr);
}

}  // namespace
}  // namespace eoc::kube
