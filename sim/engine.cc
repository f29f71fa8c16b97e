#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <list>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace eoc::sim {
namespace {

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

struct Engine::State {
  struct CacheEntry {
    std::int32_t refs = 0;
    std::list<std::uint64_t>::iterator lru;  // its place in `lru` while refs == 0
  };
  struct Seq {
    EngineRequest request;
    std::int64_t target = 0;    // tokens to compute before it decodes: its prompt, or after a
                                // preemption its prompt and the tokens it had generated
    std::int64_t computed = 0;  // of target, computed or found cached
    std::int64_t decoded = 0;   // tokens decoded since target was reached (each holds KV)
    std::int32_t generated = 0;
    std::int32_t shared = 0;  // its leading prefix blocks held in the cache
    std::int64_t private_blocks = 0;
    bool first_token = false;
    bool counted = false;  // its prompt is in the counters (once, not again after a preemption)
  };

  EngineParams p;
  const PowerProfile* profile = nullptr;
  std::int64_t total_blocks = 0;
  std::int64_t blocks_per_entry = 0;    // KV blocks one prefix block takes
  std::int64_t used_blocks = 0;         // private blocks plus every cached entry's
  std::int64_t idle_cached_blocks = 0;  // cached entries no sequence holds (evictable)
  std::deque<Seq> waiting;
  std::vector<Seq> running;  // in admission order
  std::unordered_map<std::uint64_t, CacheEntry> cache;
  std::list<std::uint64_t> lru;  // unreferenced entries, least recently used first
  EngineFigures counters;
  std::vector<std::uint64_t> refused;

  std::int64_t SharedTokens(const Seq& s) const {
    return static_cast<std::int64_t>(s.shared) * p.prefix_block_tokens;
  }
  std::int64_t PrivateFor(const Seq& s, std::int64_t kv_tokens) const {
    return CeilDiv(std::max<std::int64_t>(0, kv_tokens - SharedTokens(s)), p.kv_block_tokens);
  }
  void SetPrivate(Seq& s, std::int64_t blocks) {
    used_blocks += blocks - s.private_blocks;
    s.private_blocks = blocks;
  }

  // Frees cached blocks no sequence holds, least recently used first, until `blocks` more are
  // free; false when that is impossible.
  bool Reserve(std::int64_t blocks) {
    while (total_blocks - used_blocks < blocks) {
      if (lru.empty()) return false;
      cache.erase(lru.front());
      lru.pop_front();
      used_blocks -= blocks_per_entry;
      idle_cached_blocks -= blocks_per_entry;
    }
    return true;
  }

  void Hold(std::uint64_t hash) {
    auto [it, added] = cache.try_emplace(hash);
    if (added) {
      used_blocks += blocks_per_entry;
    } else if (it->second.refs == 0) {
      lru.erase(it->second.lru);
      idle_cached_blocks -= blocks_per_entry;
    }
    ++it->second.refs;
  }
  void Release(std::uint64_t hash) {
    auto it = cache.find(hash);
    if (it == cache.end() || --it->second.refs > 0) return;
    it->second.lru = lru.insert(lru.end(), hash);
    idle_cached_blocks += blocks_per_entry;
  }
  // Gives back everything `s` holds.
  void Free(Seq& s) {
    for (std::int32_t i = 0; i < s.shared; ++i) Release(s.request.prefix_blocks[i]);
    s.shared = 0;
    SetPrivate(s, 0);
  }

  // Full prompt blocks of `s` that the prefix cache can hold.
  std::int32_t FullBlocks(const Seq& s) const {
    const auto full = static_cast<std::size_t>(s.request.prompt_tokens / p.prefix_block_tokens);
    return static_cast<std::int32_t>(std::min(full, s.request.prefix_blocks.size()));
  }

  // Takes the cached run of s's leading blocks (at least one prompt token is left to compute).
  void LookUpPrefix(Seq& s) {
    const std::int32_t full = FullBlocks(s);
    std::int32_t hits = 0;
    while (hits < full && cache.contains(s.request.prefix_blocks[hits])) ++hits;
    while (hits > 0 && static_cast<std::int64_t>(hits) * p.prefix_block_tokens >= s.target) --hits;
    for (std::int32_t i = 0; i < hits; ++i) Hold(s.request.prefix_blocks[i]);
    s.shared = hits;
    s.computed = SharedTokens(s);
    if (!s.counted) {
      s.counted = true;
      counters.prompt_tokens_total += s.request.prompt_tokens;
      counters.prefix_queries_tokens_total += s.request.prompt_tokens;
      counters.prefix_hits_tokens_total += SharedTokens(s);
    }
  }

  // The prompt is computed: its full blocks join the prefix cache, shared from now on.
  void Publish(Seq& s) {
    const std::int32_t full = FullBlocks(s);
    for (std::int32_t i = s.shared; i < full; ++i) Hold(s.request.prefix_blocks[i]);
    s.shared = std::max(s.shared, full);
    SetPrivate(s, PrivateFor(s, s.computed + s.decoded));
  }

  // The most recently admitted running sequence goes back to the front of the queue.
  void PreemptLast() {
    Seq s = std::move(running.back());
    running.pop_back();
    Free(s);
    s.target = s.request.prompt_tokens + s.generated;
    s.computed = 0;
    s.decoded = 0;
    waiting.push_front(std::move(s));
    ++counters.preemptions_total;
  }
};

Engine::Engine(const EngineParams& params, const PowerProfile& profile)
    : s_(std::make_unique<State>()) {
  const auto bad = [](const std::string& what) { throw std::invalid_argument("engine: " + what); };
  if (params.max_num_seqs < 1) bad("max_num_seqs must be at least 1");
  if (params.max_batched_tokens < 1) bad("max_batched_tokens must be at least 1");
  if (params.kv_block_tokens < 1) bad("kv_block_tokens must be at least 1");
  if (params.prefix_block_tokens < 1 || params.prefix_block_tokens % params.kv_block_tokens != 0) {
    bad("prefix_block_tokens (" + std::to_string(params.prefix_block_tokens) +
        ") must be a positive multiple of kv_block_tokens (" +
        std::to_string(params.kv_block_tokens) + ")");
  }
  if (params.kv_capacity_tokens < params.kv_block_tokens) {
    bad("kv_capacity_tokens must hold at least one block");
  }
  if (!(params.prefill_tokens_per_second > 0) || !std::isfinite(params.prefill_tokens_per_second)) {
    bad("prefill_tokens_per_second must be a positive number");
  }
  s_->p = params;
  s_->profile = &profile;
  s_->total_blocks = params.kv_capacity_tokens / params.kv_block_tokens;
  s_->blocks_per_entry = params.prefix_block_tokens / params.kv_block_tokens;
}

Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

void Engine::Admit(EngineRequest request) {
  if (request.prompt_tokens < 1 || request.output_tokens < 1) {
    throw std::invalid_argument("engine: request " + std::to_string(request.id) +
                                " needs at least one prompt and one output token");
  }
  // One that could not run alone, even with the whole cache, is refused (vLLM refuses a prompt
  // longer than its cache); it would otherwise preempt itself forever.
  const std::int64_t tokens =
      static_cast<std::int64_t>(request.prompt_tokens) + request.output_tokens;
  if (CeilDiv(tokens, s_->p.kv_block_tokens) > s_->total_blocks) {
    s_->refused.push_back(request.id);
    return;
  }
  State::Seq seq{.request = std::move(request)};
  seq.target = seq.request.prompt_tokens;
  s_->waiting.push_back(std::move(seq));
}

bool Engine::HasWork() const { return !s_->running.empty() || !s_->waiting.empty(); }

StepResult Engine::Step() {
  State& s = *s_;
  StepResult r;
  std::int64_t budget = s.p.max_batched_tokens;
  std::vector<char> prefilling;  // per running sequence in this step: 1 prompt chunk, 0 decode

  // Running sequences first, oldest first; one that cannot get its blocks preempts the newest.
  std::size_t i = 0;
  while (i < s.running.size() && budget > 0) {
    State::Seq& seq = s.running[i];
    const bool decode = seq.computed >= seq.target;
    const std::int64_t tokens = decode ? 1 : std::min(seq.target - seq.computed, budget);
    const std::int64_t need =
        s.PrivateFor(seq, seq.computed + seq.decoded + tokens) - seq.private_blocks;
    bool self_preempted = false;
    while (!s.Reserve(need)) {
      const bool last = i + 1 == s.running.size();
      s.PreemptLast();
      ++r.preempted;
      if (last) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    State::Seq& kept = s.running[i];
    s.SetPrivate(kept, kept.private_blocks + need);
    if (decode) {
      kept.decoded += 1;
    } else {
      kept.computed += tokens;
      r.prompt_tokens += tokens;
    }
    budget -= tokens;
    prefilling.push_back(decode ? 0 : 1);
    ++i;
  }

  // Then waiting requests, in order, while there is room: not in a step that had to preempt (as
  // vLLM's scheduler, which admits nothing new then), nor past a running sequence the budget left
  // out.
  while (!s.waiting.empty() && budget > 0 && r.preempted == 0 &&
         s.running.size() < static_cast<std::size_t>(s.p.max_num_seqs) &&
         s.running.size() == prefilling.size()) {
    State::Seq& seq = s.waiting.front();
    s.LookUpPrefix(seq);
    const std::int64_t tokens = std::min(seq.target - seq.computed, budget);
    const std::int64_t need = s.PrivateFor(seq, seq.computed + tokens);
    if (!s.Reserve(need)) {
      s.Free(seq);  // its lookup's holds; it stays first in the queue
      break;
    }
    s.SetPrivate(seq, need);
    seq.computed += tokens;
    r.prompt_tokens += tokens;
    budget -= tokens;
    s.running.push_back(std::move(seq));
    s.waiting.pop_front();
    prefilling.push_back(1);
  }

  r.batch = static_cast<std::int32_t>(prefilling.size());
  if (r.batch == 0) return r;

  // The step's end: tokens emitted, prompts published, finished sequences gone.
  std::vector<State::Seq> still;
  still.reserve(s.running.size());
  for (std::size_t k = 0; k < s.running.size(); ++k) {
    State::Seq& seq = s.running[k];
    if (k < prefilling.size()) {
      const bool emits = prefilling[k] == 0 || seq.computed >= seq.target;
      if (prefilling[k] == 1 && seq.computed >= seq.target) s.Publish(seq);
      if (emits) {
        ++seq.generated;
        ++r.generated_tokens;
        if (!seq.first_token) {
          seq.first_token = true;
          r.first_token.push_back(seq.request.id);
        }
      }
    }
    if (seq.generated >= seq.request.output_tokens) {
      r.finished.push_back(seq.request.id);
      s.Free(seq);
    } else {
      still.push_back(std::move(seq));
    }
  }
  s.running = std::move(still);
  s.counters.generation_tokens_total += r.generated_tokens;

  const PowerProfile& profile = *s.profile;
  const double decode_seconds = profile.StepSeconds(r.batch);
  const double prompt_seconds =
      static_cast<double>(r.prompt_tokens) / s.p.prefill_tokens_per_second;
  r.seconds = decode_seconds + prompt_seconds;
  r.joules =
      decode_seconds * profile.Watts(r.batch) + prompt_seconds * profile.Watts(profile.max_batch());
  return r;
}

EngineFigures Engine::Figures() const {
  const State& s = *s_;
  EngineFigures f = s.counters;
  f.running = static_cast<std::int32_t>(s.running.size());
  f.waiting = static_cast<std::int32_t>(s.waiting.size());
  f.kv_blocks_total = s.total_blocks;
  f.kv_block_tokens = s.p.kv_block_tokens;
  f.kv_cache_usage = static_cast<double>(s.used_blocks - s.idle_cached_blocks) /
                     static_cast<double>(s.total_blocks);
  return f;
}

std::vector<std::uint64_t> Engine::TakeRefused() { return std::exchange(s_->refused, {}); }

const PowerProfile& Engine::profile() const { return *s_->profile; }

}  // namespace eoc::sim
