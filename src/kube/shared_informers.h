// Informers keyed by what they watch ("namespace/name" of one ConfigMap, "namespace?selector" of
// some pods, ...), each shared by the users (pools, say) that read it: made for the first user
// that names its key, and handed back to be stopped once no user names it any more.
//
//   SharedInformers<PodView> watches;                      // under the owner's lock:
//   std::unique_ptr<Informer<PodView>> unused;
//   Informer<PodView>* w = watches.Use("prod/chat", key, [&] { return MakeAndStart(); }, unused);
//   auto pools = watches.Users(key);                        // for a change of w's objects
//   unused = watches.Forget("prod/chat");
//   // after the owner's lock is released: unused.reset() stops the informer it held
//
// Not thread-safe: its owner calls it under a lock of its own, and destroys the informers it is
// handed back (which joins their threads) only after releasing that lock, since their handlers
// may be waiting for it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kube/informer.h"

namespace eoc::kube {

template <class View>
class SharedInformers {
 public:
  using Watch = Informer<View>;

  // `user` reads the informer of the key `watched` from now on ("" for none): returns it, made by
  // `make` (a callable returning std::unique_ptr<Watch>) when no user read it before, or nullptr
  // for "".
  // The informer `user` read until now is moved into `released` when no user reads it any more.
  template <class Make>
  Watch* Use(const std::string& user, const std::string& watched, Make&& make,
             std::unique_ptr<Watch>& released) {
    std::string before;
    if (watched.empty()) {
      if (const auto it = users_.find(user); it != users_.end()) {
        before = std::move(it->second);
        users_.erase(it);
      }
    } else if (std::string& current = users_[user]; current != watched) {
      before = std::exchange(current, watched);
    }
    Watch* watch = nullptr;
    if (!watched.empty()) {
      auto& slot = watches_[watched];
      if (!slot) slot = std::forward<Make>(make)();
      watch = slot.get();
    }
    released = Release(before);
    return watch;
  }

  // `user` reads no informer any more: the one it read, when no other user reads it.
  std::unique_ptr<Watch> Forget(const std::string& user) {
    const auto it = users_.find(user);
    if (it == users_.end()) return nullptr;
    const std::string key = std::move(it->second);
    users_.erase(it);
    return Release(key);
  }

  // The users that read the informer of the key `watched`, sorted.
  std::vector<std::string> Users(const std::string& watched) const {
    std::vector<std::string> out;
    for (const auto& [user, read] : users_) {
      if (read == watched) out.push_back(user);
    }
    return out;
  }

  // Every informer, for the owner to stop; none are left, and no user reads one.
  std::map<std::string, std::unique_ptr<Watch>> TakeAll() {
    users_.clear();
    return std::exchange(watches_, {});
  }

  // The informers there are now: one per key some user reads.
  std::size_t size() const { return watches_.size(); }

 private:
  // The informer of `key`, moved out, when no user reads it.
  std::unique_ptr<Watch> Release(const std::string& key) {
    if (key.empty()) return nullptr;
    for (const auto& [user, read] : users_) {
      if (read == key) return nullptr;
    }
    const auto it = watches_.find(key);
    if (it == watches_.end()) return nullptr;
    std::unique_ptr<Watch> watch = std::move(it->second);
    watches_.erase(it);
    return watch;
  }

  std::map<std::string, std::string> users_;               // user -> the key it reads
  std::map<std::string, std::unique_ptr<Watch>> watches_;  // by key
};

}  // namespace eoc::kube
