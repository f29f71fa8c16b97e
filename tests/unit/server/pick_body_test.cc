#include "server/pick_body.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "routing/prefix_hash.h"

namespace eoc::server {
namespace {

// The message ParsePickBody gives for `body`, with a fresh PickBody and scratch.
std::string ErrorOf(std::string_view body) {
  PickBody out;
  PickBodyScratch scratch;
  return ParsePickBody(body, out, scratch);
}

bool PointsInto(std::string_view part, std::string_view whole) {
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

// "0000000000000000", "0000000000000001", ...: the i-th hash as its hex text.
std::string HashText(std::size_t i) { return routing::FormatBlockHash(i); }

TEST(PickBodyTest, ReadsEveryField) {
  const std::string body =
      R"({"pool":"prod/chat","model":"llama-3-8b","session_id":"user-42","prompt_tokens":1200,)"
      R"("expected_tokens":300,"prefix_hashes":["3f2a9c0d1e4b5a67","0000000000000001"],)"
      R"("wait_ms":2500})";
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(body, out, scratch), "");
  EXPECT_EQ(out.pool, "prod/chat");
  EXPECT_EQ(out.model, "llama-3-8b");
  EXPECT_EQ(out.session_id, "user-42");
  EXPECT_EQ(out.prompt_tokens, 1200);
  EXPECT_EQ(out.expected_tokens, 300);
  EXPECT_EQ(out.prefix_hashes,
            (std::vector<routing::BlockHash>{0x3f2a9c0d1e4b5a67ULL, 0x0000000000000001ULL}));
  EXPECT_EQ(out.prompt, std::nullopt);
  EXPECT_EQ(out.wait_ms, 2500);
  EXPECT_TRUE(PointsInto(out.pool, body)) << "no escapes: a view into the body";
  EXPECT_TRUE(PointsInto(out.model, body));
  EXPECT_TRUE(PointsInto(*out.session_id, body));

  ASSERT_EQ(ParsePickBody(R"({"prompt":"Hello, world","pool":"ns/a"})", out, scratch), "");
  EXPECT_EQ(out.pool, "ns/a");
  EXPECT_EQ(out.prompt, "Hello, world");
  EXPECT_TRUE(out.prefix_hashes.empty());
}

TEST(PickBodyTest, AbsentAndNullFieldsTakeTheirDefaults) {
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/a"})", out, scratch), "");
  EXPECT_EQ(out.pool, "ns/a");
  EXPECT_EQ(out.model, "");
  EXPECT_EQ(out.session_id, std::nullopt);
  EXPECT_EQ(out.prompt_tokens, 0);
  EXPECT_EQ(out.expected_tokens, 0);
  EXPECT_TRUE(out.prefix_hashes.empty());
  EXPECT_EQ(out.prompt, std::nullopt);
  EXPECT_EQ(out.wait_ms, std::nullopt);

  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/a","model":null,"session_id":null,"prompt_tokens":null,)"
                          R"("expected_tokens":null,"prefix_hashes":null,"prompt":null,)"
                          R"("wait_ms":null})",
                          out, scratch),
            "");
  EXPECT_EQ(out.model, "");
  EXPECT_EQ(out.session_id, std::nullopt);
  EXPECT_EQ(out.prompt_tokens, 0);
  EXPECT_EQ(out.expected_tokens, 0);
  EXPECT_TRUE(out.prefix_hashes.empty());
  EXPECT_EQ(out.prompt, std::nullopt);
  EXPECT_EQ(out.wait_ms, std::nullopt);

  // Null prefix_hashes is not given, so a prompt may come with it; an empty model is no model.
  ASSERT_EQ(
      ParsePickBody(R"({"pool":"ns/a","prefix_hashes":null,"prompt":"","model":""})", out, scratch),
      "");
  EXPECT_EQ(out.prompt, "");
  EXPECT_EQ(out.model, "");
  // Zero is a value, not an absence.
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/a","wait_ms":0,"prompt_tokens":0})", out, scratch), "");
  EXPECT_EQ(out.wait_ms, 0);
  EXPECT_EQ(out.prompt_tokens, 0);
}

TEST(PickBodyTest, BoundsOfTheIntegerFields) {
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(R"({"pool":"a","prompt_tokens":1000000000,"expected_tokens":1000000000,)"
                          R"("wait_ms":3600000})",
                          out, scratch),
            "");
  EXPECT_EQ(out.prompt_tokens, 1'000'000'000);
  EXPECT_EQ(out.expected_tokens, 1'000'000'000);
  EXPECT_EQ(out.wait_ms, 3'600'000);

  const std::string tokens = "prompt_tokens: must be a whole number from 0 to 1000000000";
  for (const std::string_view value :
       {"1000000001", "-1", "-0", "1.0", "1.5", "1e3", "1E3", "0e0", "\"5\"", "true", "false", "[]",
        "{}", "[5]", "99999999999999999999999999999", "9223372036854775807", "9223372036854775808",
        "18446744073709551616", "100000000000000000000"}) {
    EXPECT_EQ(ErrorOf(R"({"pool":"a","prompt_tokens":)" + std::string(value) + "}"), tokens)
        << value;
  }
  EXPECT_EQ(ErrorOf(R"({"pool":"a","expected_tokens":1000000001})"),
            "expected_tokens: must be a whole number from 0 to 1000000000");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","expected_tokens":-5})"),
            "expected_tokens: must be a whole number from 0 to 1000000000");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","wait_ms":3600001})"),
            "wait_ms: must be a whole number from 0 to 3600000");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","wait_ms":2.5})"),
            "wait_ms: must be a whole number from 0 to 3600000");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","wait_ms":"100"})"),
            "wait_ms: must be a whole number from 0 to 3600000");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","wait_ms":999999999999999999})"),
            "wait_ms: must be a whole number from 0 to 3600000");
}

TEST(PickBodyTest, StringFieldErrors) {
  EXPECT_EQ(ErrorOf(R"({})"), "pool: required");
  EXPECT_EQ(ErrorOf(R"({"model":"m"})"), "pool: required");
  EXPECT_EQ(ErrorOf(R"({"pool":null})"), "pool: required");
  EXPECT_EQ(ErrorOf(R"({"pool":""})"), "pool: must not be empty");
  EXPECT_EQ(ErrorOf(R"({"pool":5})"), "pool: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":["ns/a"]})"), "pool: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":{"ns":"a"}})"), "pool: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":true})"), "pool: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","model":7})"), "model: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","session_id":7})"), "session_id: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","session_id":""})"), "session_id: must not be empty");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prompt":false})"), "prompt: must be a string");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prompt":["x"]})"), "prompt: must be a string");
}

TEST(PickBodyTest, LengthBoundsCountDecodedBytes) {
  ASSERT_EQ(routing::kMaxModelNameBytes, 253U);
  ASSERT_EQ(routing::kMaxSessionIdBytes, 256U);
  const auto with = [](std::string_view field, const std::string& value) {
    return R"({"pool":"a",")" + std::string(field) + R"(":")" + value + R"("})";
  };
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(with("model", std::string(253, 'm')), out, scratch), "");
  EXPECT_EQ(out.model.size(), 253U);
  EXPECT_EQ(ErrorOf(with("model", std::string(254, 'm'))), "model: at most 253 bytes");
  ASSERT_EQ(ParsePickBody(with("session_id", std::string(256, 's')), out, scratch), "");
  EXPECT_EQ(out.session_id->size(), 256U);
  EXPECT_EQ(ErrorOf(with("session_id", std::string(257, 's'))), "session_id: at most 256 bytes");

  // 128 escapes of 6 bytes each decode to 2 bytes each: 768 in the body, 256 decoded.
  std::string e_acute;
  for (int i = 0; i < 128; ++i) e_acute += "\\u00e9";
  ASSERT_EQ(ParsePickBody(with("session_id", e_acute), out, scratch), "");
  EXPECT_EQ(out.session_id->size(), 256U);
  EXPECT_EQ(ErrorOf(with("session_id", e_acute + "x")), "session_id: at most 256 bytes");
}

TEST(PickBodyTest, DecodesEscapesAndSurrogatePairs) {
  PickBody out;
  PickBodyScratch scratch;
  const auto prompt_of = [&](std::string_view encoded) -> std::string {
    const std::string body = R"({"pool":"a","prompt":")" + std::string(encoded) + R"("})";
    const std::string error = ParsePickBody(body, out, scratch);
    if (!error.empty()) return "error: " + error;
    return std::string(*out.prompt);
  };
  EXPECT_EQ(prompt_of(R"(\u00e9)"), "\xc3\xa9");
  EXPECT_EQ(prompt_of(R"(\u00E9)"), "\xc3\xa9");
  EXPECT_EQ(prompt_of(R"(caf\u00e9!)"), "caf\xc3\xa9!");
  EXPECT_EQ(prompt_of(R"(\u0041)"), "A");
  EXPECT_EQ(prompt_of(R"(\u007f)"), "\x7f");
  EXPECT_EQ(prompt_of(R"(\u0080)"), "\xc2\x80");
  EXPECT_EQ(prompt_of(R"(\u07ff)"), "\xdf\xbf");
  EXPECT_EQ(prompt_of(R"(\u0800)"), "\xe0\xa0\x80");
  EXPECT_EQ(prompt_of(R"(\u20ac)"), "\xe2\x82\xac");
  EXPECT_EQ(prompt_of(R"(\uffff)"), "\xef\xbf\xbf");
  EXPECT_EQ(prompt_of(R"(\ud83d\ude00)"), "\xf0\x9f\x98\x80");
  EXPECT_EQ(prompt_of(R"(\uD83D\uDE00)"), "\xf0\x9f\x98\x80");
  EXPECT_EQ(prompt_of(R"(\ud800\udc00)"), "\xf0\x90\x80\x80");
  EXPECT_EQ(prompt_of(R"(\udbff\udfff)"), "\xf4\x8f\xbf\xbf");
  EXPECT_EQ(prompt_of(R"(\u0000)"), std::string(1, '\0'));
  EXPECT_EQ(prompt_of(R"(\"\\\/\b\f\n\r\t)"), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(prompt_of(R"(a\nb\tc)"), "a\nb\tc");
  // Invalid UTF-8 in the raw bytes passes through; DEL is no control character in JSON.
  EXPECT_EQ(prompt_of("\xff\xfe\xc3\x28\x7f"), "\xff\xfe\xc3\x28\x7f");
  EXPECT_EQ(prompt_of("\xc3\xa9 and \\u00e9"), "\xc3\xa9 and \xc3\xa9");
}

TEST(PickBodyTest, RefusesLoneSurrogatesAndBadEscapes) {
  // The string starts at byte 21, so its first escape is at byte 22.
  const auto error_of = [](std::string_view encoded) {
    return ErrorOf(R"({"pool":"a","prompt":")" + std::string(encoded) + R"("})");
  };
  EXPECT_EQ(error_of(R"(\ud83d)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(\ude00)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(\ude00\ud83d)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(\ud83dx)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(\ud83d\n)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(\ud83d\u0041)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(\ud83d\ud83d)"), "body: not valid JSON at byte 22: lone surrogate");
  EXPECT_EQ(error_of(R"(ab\ud83d)"), "body: not valid JSON at byte 24: lone surrogate");
  EXPECT_EQ(error_of(R"(\ud83d\ude0g)"),
            "body: not valid JSON at byte 33: expected 4 hex digits after \\u");
  EXPECT_EQ(error_of(R"(\u12G4)"),
            "body: not valid JSON at byte 26: expected 4 hex digits after \\u");
  EXPECT_EQ(error_of(R"(\u12)"),
            "body: not valid JSON at byte 26: expected 4 hex digits after \\u");
  EXPECT_EQ(error_of(R"(\q)"), "body: not valid JSON at byte 22: invalid escape");
  EXPECT_EQ(error_of(R"(\x41)"), "body: not valid JSON at byte 22: invalid escape");
  EXPECT_EQ(error_of(R"(\U00e9)"), "body: not valid JSON at byte 22: invalid escape");
  EXPECT_EQ(error_of(R"(\')"), "body: not valid JSON at byte 22: invalid escape");
  EXPECT_EQ(error_of("a\tb"), "body: not valid JSON at byte 23: control character in a string");
  EXPECT_EQ(error_of("a\nb"), "body: not valid JSON at byte 23: control character in a string");
  EXPECT_EQ(error_of(std::string("a\0b", 3)),
            "body: not valid JSON at byte 23: control character in a string");
  EXPECT_EQ(error_of("\x1f"), "body: not valid JSON at byte 22: control character in a string");
  // In a key, and in a skipped value, alike.
  EXPECT_EQ(ErrorOf(R"({"po\u00"})"),
            "body: not valid JSON at byte 8: expected 4 hex digits after \\u");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":["\ud83d"]})"),
            "body: not valid JSON at byte 18: lone surrogate");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":{"\q":1}})"),
            "body: not valid JSON at byte 18: invalid escape");
}

TEST(PickBodyTest, StringsWithoutEscapesAreViewsIntoTheBody) {
  PickBody out;
  PickBodyScratch scratch;
  const std::string plain = R"({"pool":"ns/a","prompt":"You are a helpful assistant."})";
  ASSERT_EQ(ParsePickBody(plain, out, scratch), "");
  EXPECT_EQ(out.prompt, "You are a helpful assistant.");
  EXPECT_EQ(out.prompt->data(), plain.data() + 25);

  const std::string escaped = R"({"pool":"ns\/a","prompt":"line 1\nline 2"})";
  ASSERT_EQ(ParsePickBody(escaped, out, scratch), "");
  EXPECT_EQ(out.pool, "ns/a");
  EXPECT_EQ(out.prompt, "line 1\nline 2");
  EXPECT_EQ(out.pool.data(), scratch.pool.data()) << "decoded: a view into the scratch";
  EXPECT_EQ(out.prompt->data(), scratch.prompt.data());
  EXPECT_FALSE(PointsInto(*out.prompt, escaped));
}

TEST(PickBodyTest, ReadsALongPromptWithAndWithoutEscapes) {
  std::string text;
  constexpr std::size_t kPromptBytes = std::size_t{220} * 1024;
  text.reserve(kPromptBytes);
  while (text.size() < kPromptBytes)
    text += "The quick brown fox jumps over the lazy dog. \xc3\xa9 ";
  PickBody out;
  PickBodyScratch scratch;
  const std::string plain = R"({"pool":"ns/a","prompt":")" + text + R"("})";
  ASSERT_EQ(ParsePickBody(plain, out, scratch), "");
  EXPECT_EQ(out.prompt, text);
  EXPECT_TRUE(PointsInto(*out.prompt, plain));

  // One escape at the end: all of it decoded into the scratch.
  const std::string escaped = R"({"pool":"ns/a","prompt":")" + text + R"(\t"})";
  ASSERT_EQ(ParsePickBody(escaped, out, scratch), "");
  EXPECT_EQ(out.prompt, text + "\t");
  EXPECT_EQ(out.prompt->data(), scratch.prompt.data());
}

TEST(PickBodyTest, FindsQuotesEscapesAndControlsAtEveryAlignment) {
  // The scan reads 8 bytes at a time: put the special byte at every offset in a word, among bytes
  // that differ from '"', '\\' and the controls by their high bit only.
  PickBody out;
  PickBodyScratch scratch;
  const std::string filler = "\xa2\xdc\x80\xa0\x9f\x7f \x21\x5b\x5d";
  for (std::size_t lead = 0; lead < 24; ++lead) {
    std::string text;
    for (std::size_t i = 0; i < lead; ++i) text += filler[i % filler.size()];
    const std::string head = R"({"pool":"a","prompt":")";

    const std::string ends = head + text + R"("})";
    ASSERT_EQ(ParsePickBody(ends, out, scratch), "") << lead;
    EXPECT_EQ(out.prompt, text) << lead;

    const std::string escape = head + text + R"(\"x"})";
    ASSERT_EQ(ParsePickBody(escape, out, scratch), "") << lead;
    EXPECT_EQ(out.prompt, text + "\"x") << lead;

    for (const char control : {'\0', '\x01', '\x1f', '\n'}) {
      const std::string bad = head + text + control + std::string(20, 'y') + R"("})";
      EXPECT_EQ(ErrorOf(bad), "body: not valid JSON at byte " + std::to_string(22 + lead) +
                                  ": control character in a string")
          << lead;
    }
  }
}

TEST(PickBodyTest, PrefixHashes) {
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(R"({"pool":"a","prefix_hashes":["ABCDEF0123456789","abcdef0123456789",)"
                          R"("FfFfFfFfFfFfFfFf"]})",
                          out, scratch),
            "");
  EXPECT_EQ(out.prefix_hashes,
            (std::vector<routing::BlockHash>{0xabcdef0123456789ULL, 0xabcdef0123456789ULL,
                                             0xffffffffffffffffULL}));
  ASSERT_EQ(ParsePickBody(R"({"pool":"a","prefix_hashes":[]})", out, scratch), "");
  EXPECT_TRUE(out.prefix_hashes.empty());
  // An escape in a hash is decoded like any other.
  ASSERT_EQ(
      ParsePickBody(R"({"pool":"a","prefix_hashes":["\u0030123456789abcdef"]})", out, scratch), "");
  EXPECT_EQ(out.prefix_hashes, (std::vector<routing::BlockHash>{0x0123456789abcdefULL}));

  for (const std::string_view element :
       {R"("0123456789abcde")", R"("0123456789abcdef0")", R"("0123456789abcdeg")",
        R"("0x23456789abcdef")", R"("+123456789abcdef")", R"(" 123456789abcdef")", R"("")",
        "1234567890123456", "null", "true", "[]", R"(["0123456789abcdef"])", "{}"}) {
    EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":["0123456789abcdef",)" + std::string(element) +
                      "]}"),
              "prefix_hashes[1]: must be 16 hex digits")
        << element;
  }
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":[5]})"),
            "prefix_hashes[0]: must be 16 hex digits");
  for (const std::string_view value : {R"("0123456789abcdef")", "{}", "5", "true"}) {
    EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":)" + std::string(value) + "}"),
              "prefix_hashes: must be an array")
        << value;
  }
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":["0123456789abcdef",]})"),
            "body: not valid JSON at byte 48: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":["0123456789abcdef" "0123456789abcdef"]})"),
            "body: not valid JSON at byte 48: expected ',' or ']'");
}

TEST(PickBodyTest, KeepsTheFirst256PrefixHashesAndChecksTheRest) {
  ASSERT_EQ(routing::kMaxPrefixBlocks, 256U);
  std::string body = R"({"pool":"a","prefix_hashes":[)";
  for (std::size_t i = 0; i < 300; ++i) body += (i == 0 ? "\"" : ",\"") + HashText(i) + "\"";
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(body + "]}", out, scratch), "");
  ASSERT_EQ(out.prefix_hashes.size(), 256U);
  for (std::size_t i = 0; i < 256; ++i) EXPECT_EQ(out.prefix_hashes[i], i);

  EXPECT_EQ(ErrorOf(body + R"(,"not-a-hash"]})"), "prefix_hashes[300]: must be 16 hex digits");
  EXPECT_EQ(ErrorOf(body + ",7]}"), "prefix_hashes[300]: must be 16 hex digits");
}

TEST(PickBodyTest, PrefixHashesOrPromptNotBoth) {
  const std::string both = "give prefix_hashes or prompt, not both";
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":["0123456789abcdef"],"prompt":"x"})"), both);
  EXPECT_EQ(ErrorOf(R"({"prompt":"","pool":"a","prefix_hashes":[]})"), both);
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":null,"prompt":"x"})"), "");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":[],"prompt":null})"), "");
}

TEST(PickBodyTest, DuplicateKeysAreRefused) {
  EXPECT_EQ(ErrorOf(R"({"pool":"a","model":"m","model":"m"})"), R"(field "model" appears twice)");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","pool":"b"})"), R"(field "pool" appears twice)");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","wait_ms":null,"wait_ms":5})"),
            R"(field "wait_ms" appears twice)");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prefix_hashes":[],"prefix_hashes":[]})"),
            R"(field "prefix_hashes" appears twice)");
  // A key with escapes is the key it decodes to.
  EXPECT_EQ(ErrorOf(R"({"pool":"a","model":"m","mod\u0065l":"n"})"),
            R"(field "model" appears twice)");
  // Unknown fields are not tracked: skipped, whatever they are.
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":1,"x":2})"), "");
}

TEST(PickBodyTest, EscapedKeysNameTheirFields) {
  PickBody out;
  PickBodyScratch scratch;
  ASSERT_EQ(ParsePickBody(R"({"po\u006fl":"ns/a","wait\u005fms":7})", out, scratch), "");
  EXPECT_EQ(out.pool, "ns/a");
  EXPECT_EQ(out.wait_ms, 7);
  // Keys compare exactly: no case folding, no trimming.
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/a","Model":"m","model ":"n"})", out, scratch), "");
  EXPECT_EQ(out.model, "");
}

TEST(PickBodyTest, SkipsUnknownFieldsWhateverTheirValue) {
  PickBody out;
  PickBodyScratch scratch;
  const std::string body =
      R"({"stream":true,"temperature":-0.5e-3,"n":1E+2,"stop":null,"tags":[],"meta":{},)"
      R"("messages":[{"role":"user","content":"hi \"there\" \ud83d\ude00","x":[1,[2,[3]],{}]}],)"
      R"("pool":"ns/a","options":{"a":{"b":{"c":[false,"}",""]}}},"prompt_tokens":12,)"
      R"("prefix_hashes":{"ignored":"because unknown"},"model":"m"})";
  ASSERT_EQ(ParsePickBody(body, out, scratch), "prefix_hashes: must be an array");
  const std::string valid =
      R"({"stream":true,"temperature":-0.5e-3,"n":1E+2,"stop":null,"tags":[],"meta":{},)"
      R"("messages":[{"role":"user","content":"hi \"there\" \ud83d\ude00","x":[1,[2,[3]],{}]}],)"
      R"("pool":"ns/a","options":{"a":{"b":{"c":[false,"}",""]}}},"prompt_tokens":12,)"
      R"("model":"m","z":0})";
  ASSERT_EQ(ParsePickBody(valid, out, scratch), "");
  EXPECT_EQ(out.pool, "ns/a");
  EXPECT_EQ(out.prompt_tokens, 12);
  EXPECT_EQ(out.model, "m");

  // Skipped values are still checked.
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":[1,2,]})"),
            "body: not valid JSON at byte 21: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":{"a":1,}})"),
            "body: not valid JSON at byte 23: expected a string key");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":{"a" 1}})"),
            "body: not valid JSON at byte 21: expected ':'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":{a:1}})"),
            "body: not valid JSON at byte 17: expected a string key");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":[1}})"),
            "body: not valid JSON at byte 18: expected ',' or ']'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":{"a":1]})"),
            "body: not valid JSON at byte 22: expected ',' or '}'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":[01]})"),
            "body: not valid JSON at byte 18: leading zero in a number");
}

TEST(PickBodyTest, NestsAtMost64Deep) {
  ASSERT_EQ(kMaxPickBodyDepth, 64);
  // The body's object is the first level: 63 arrays more make 64.
  const auto nested = [](std::size_t arrays) {
    return R"({"pool":"a","x":)" + std::string(arrays, '[') + std::string(arrays, ']') + "}";
  };
  EXPECT_EQ(ErrorOf(nested(63)), "");
  EXPECT_EQ(ErrorOf(nested(64)), "body: objects and arrays nested deeper than 64 at byte 79");
  std::string objects = R"({"pool":"a","x":)";
  for (int i = 0; i < 62; ++i) objects += R"({"k":)";
  objects += "[]";
  for (int i = 0; i < 62; ++i) objects += "}";
  EXPECT_EQ(ErrorOf(objects + "}"), "");
  // In prefix_hashes too: the array is the second level, its elements the third.
  const auto in_hashes = [](std::size_t arrays) {
    return R"({"pool":"a","prefix_hashes":[)" + std::string(arrays, '[') +
           std::string(arrays, ']') + "]}";
  };
  EXPECT_EQ(ErrorOf(in_hashes(62)), "prefix_hashes[0]: must be 16 hex digits");
  EXPECT_EQ(ErrorOf(in_hashes(63)), "body: objects and arrays nested deeper than 64 at byte 91");
  // Deep enough to overflow any recursion: refused, without one.
  const std::string deep = R"({"pool":"a","x":)" + std::string(1'000'000, '[');
  EXPECT_EQ(ErrorOf(deep), "body: objects and arrays nested deeper than 64 at byte 79");
  EXPECT_EQ(ErrorOf(std::string(1'000'000, '{')),
            "body: not valid JSON at byte 1: expected a string key");
}

TEST(PickBodyTest, SyntaxErrorsNameTheByte) {
  EXPECT_EQ(ErrorOf(""), "body: expected a JSON object");
  EXPECT_EQ(ErrorOf("  \n "), "body: expected a JSON object");
  EXPECT_EQ(ErrorOf("[]"), "body: expected a JSON object");
  EXPECT_EQ(ErrorOf(R"("pool")"), "body: expected a JSON object");
  EXPECT_EQ(ErrorOf("null"), "body: expected a JSON object");
  EXPECT_EQ(ErrorOf("\xef\xbb\xbf{}"), "body: expected a JSON object") << "no byte order mark";
  EXPECT_EQ(ErrorOf("{"), "body: not valid JSON at byte 1: unexpected end");
  EXPECT_EQ(ErrorOf(R"({"pool":"a",})"), "body: not valid JSON at byte 12: expected a string key");
  EXPECT_EQ(ErrorOf(R"({"pool" "a"})"), "body: not valid JSON at byte 8: expected ':'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a" "b"})"), "body: not valid JSON at byte 12: expected ',' or '}'");
  EXPECT_EQ(ErrorOf(R"({'pool':'a'})"), "body: not valid JSON at byte 1: expected a string key");
  EXPECT_EQ(ErrorOf(R"({"pool":'a'})"), "body: not valid JSON at byte 8: expected a value");
  EXPECT_EQ(ErrorOf(R"({pool:"a"})"), "body: not valid JSON at byte 1: expected a string key");
  EXPECT_EQ(ErrorOf(R"({"pool":"a"} x)"),
            "body: not valid JSON at byte 13: unexpected data after the object");
  EXPECT_EQ(ErrorOf(R"({"pool":"a"}{})"),
            "body: not valid JSON at byte 12: unexpected data after the object");
  EXPECT_EQ(ErrorOf(R"({"pool":"a"}/* c */)"),
            "body: not valid JSON at byte 12: unexpected data after the object");
  EXPECT_EQ(ErrorOf(R"({"pool":"a",/* c */"model":"m"})"),
            "body: not valid JSON at byte 12: expected a string key");
  EXPECT_EQ(ErrorOf("{\"pool\":\"a\" // c\n}"),
            "body: not valid JSON at byte 12: expected ',' or '}'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prompt_tokens":012})"),
            "body: not valid JSON at byte 29: leading zero in a number");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","prompt_tokens":00})"),
            "body: not valid JSON at byte 29: leading zero in a number");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":-})"), "body: not valid JSON at byte 17: expected a digit");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":1.})"), "body: not valid JSON at byte 18: expected a digit");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":.5})"), "body: not valid JSON at byte 16: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":+5})"), "body: not valid JSON at byte 16: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":1e})"), "body: not valid JSON at byte 18: expected a digit");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":1e+})"),
            "body: not valid JSON at byte 19: expected a digit");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":NaN})"),
            "body: not valid JSON at byte 16: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":tru})"),
            "body: not valid JSON at byte 16: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":True})"),
            "body: not valid JSON at byte 16: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":nulls})"),
            "body: not valid JSON at byte 20: expected ',' or '}'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a","x":})"), "body: not valid JSON at byte 16: expected a value");
  EXPECT_EQ(ErrorOf(R"({"pool":"a""x":1})"),
            "body: not valid JSON at byte 11: expected ',' or '}'");
  EXPECT_EQ(ErrorOf(R"({"pool":"a",,"x":1})"),
            "body: not valid JSON at byte 12: expected a string key");
  EXPECT_EQ(ErrorOf(std::string("{\"pool\":\"a\"}\0", 13)),
            "body: not valid JSON at byte 12: unexpected data after the object");
}

TEST(PickBodyTest, SyntaxErrorsComeBeforeFieldErrors) {
  EXPECT_EQ(ErrorOf(R"({"pool":5,"model":7)"), "body: not valid JSON at byte 19: unexpected end");
  EXPECT_EQ(ErrorOf(R"({"pool":5,"model":7,})"),
            "body: not valid JSON at byte 20: expected a string key");
  // Among fields, the first in the body.
  EXPECT_EQ(ErrorOf(R"({"model":7,"pool":5})"), "model: must be a string");
  EXPECT_EQ(ErrorOf(R"({"wait_ms":-1,"prefix_hashes":[1],"prompt":"x"})"),
            "wait_ms: must be a whole number from 0 to 3600000");
}

TEST(PickBodyTest, EveryTruncationIsAnError) {
  const std::string body =
      R"({"pool":"prod/chat","model":"m\u00e9","session_id":"s\ud83d\ude00","prompt_tokens":12,)"
      R"("expected_tokens":3e0,"prefix_hashes":["3f2a9c0d1e4b5a67"],"wait_ms":-1.5E+2,)"
      R"("x":[true,false,null,{"y":"\"\\\/\b\f\n\r\t"}],"prompt":null})";
  // The whole is valid JSON, with field errors of its own: a shorter piece must be refused as
  // JSON, whatever the field errors.
  ASSERT_EQ(ErrorOf(body), "expected_tokens: must be a whole number from 0 to 1000000000");
  for (std::size_t n = 0; n < body.size(); ++n) {
    const std::string error = ErrorOf(body.substr(0, n));
    EXPECT_TRUE(error.starts_with("body: ")) << n << ": " << error;
  }
  const std::string valid =
      R"({ "pool" : "prod/chat" , "model" : "m\u00e9" , "prefix_hashes" : [ "3f2a9c0d1e4b5a67" ] })";
  ASSERT_EQ(ErrorOf(valid), "");
  for (std::size_t n = 0; n < valid.size(); ++n) {
    EXPECT_NE(ErrorOf(valid.substr(0, n)), "") << n;
    // Into a buffer of just that size, so that a read past the end is the sanitizers' to see.
    const std::vector<char> exact(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(ErrorOf(std::string_view(exact.data(), exact.size())), "") << n;
  }
}

TEST(PickBodyTest, WhitespaceAroundTokens) {
  PickBody out;
  PickBodyScratch scratch;
  for (const std::string_view ws : {"", " ", "\t", "\n", "\r\n", " \t\r\n  "}) {
    // The tokens of one body, with `ws` before, between and after them all.
    std::string body(ws);
    for (const std::string_view token : {"{",
                                         R"("pool")",
                                         ":",
                                         R"("ns/a")",
                                         ",",
                                         R"("prefix_hashes")",
                                         ":",
                                         "[",
                                         R"("0000000000000001")",
                                         ",",
                                         R"("0000000000000002")",
                                         "]",
                                         ",",
                                         R"("wait_ms")",
                                         ":",
                                         "10",
                                         ",",
                                         R"("x")",
                                         ":",
                                         "{",
                                         R"("y")",
                                         ":",
                                         "[",
                                         "1",
                                         ",",
                                         "{",
                                         "}",
                                         "]",
                                         "}",
                                         "}"}) {
      body += token;
      body += ws;
    }
    ASSERT_EQ(ParsePickBody(body, out, scratch), "") << body;
    EXPECT_EQ(out.pool, "ns/a");
    EXPECT_EQ(out.prefix_hashes, (std::vector<routing::BlockHash>{1, 2}));
    EXPECT_EQ(out.wait_ms, 10);
  }
  // Other whitespace is not JSON's.
  EXPECT_EQ(ErrorOf("{\"pool\":\v\"a\"}"), "body: not valid JSON at byte 8: expected a value");
  EXPECT_EQ(ErrorOf("{\"pool\":\"a\"}\f"),
            "body: not valid JSON at byte 12: unexpected data after the object");
  EXPECT_EQ(ErrorOf("{\"pool\":\xc2\xa0\"a\"}"),
            "body: not valid JSON at byte 8: expected a value");
}

TEST(PickBodyTest, ReusesTheBodyAndScratchAcrossParses) {
  PickBody out;
  PickBodyScratch scratch;
  std::string body = R"({"pool":"ns\/a","model":"m","session_id":"s","prompt_tokens":5,)"
                     R"("expected_tokens":6,"wait_ms":7,"prefix_hashes":[)";
  for (std::size_t i = 0; i < 100; ++i) body += (i == 0 ? "\"" : ",\"") + HashText(i) + "\"";
  body += "]}";
  ASSERT_EQ(ParsePickBody(body, out, scratch), "");
  ASSERT_EQ(out.prefix_hashes.size(), 100U);
  EXPECT_EQ(out.pool, "ns/a");
  const std::size_t capacity = out.prefix_hashes.capacity();
  const routing::BlockHash* hashes = out.prefix_hashes.data();

  // Everything from the last parse is gone; the memory stays.
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/b","prefix_hashes":["000000000000000a"]})", out, scratch),
            "");
  EXPECT_EQ(out.pool, "ns/b");
  EXPECT_EQ(out.model, "");
  EXPECT_EQ(out.session_id, std::nullopt);
  EXPECT_EQ(out.prompt_tokens, 0);
  EXPECT_EQ(out.expected_tokens, 0);
  EXPECT_EQ(out.wait_ms, std::nullopt);
  EXPECT_EQ(out.prefix_hashes, (std::vector<routing::BlockHash>{10}));
  EXPECT_EQ(out.prefix_hashes.capacity(), capacity);
  EXPECT_EQ(out.prefix_hashes.data(), hashes);

  // A second decoded pool reuses the scratch's buffer.
  const char* pool_buffer = scratch.pool.data();
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns\/c","prompt":"p"})", out, scratch), "");
  EXPECT_EQ(out.pool, "ns/c");
  EXPECT_EQ(out.pool.data(), pool_buffer);
  EXPECT_EQ(out.prompt, "p");
  EXPECT_TRUE(out.prefix_hashes.empty());

  // A failed parse leaves nothing behind either.
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/d","model":"m","wait_ms":-1})", out, scratch),
            "wait_ms: must be a whole number from 0 to 3600000");
  EXPECT_EQ(out.pool, "");
  EXPECT_EQ(out.model, "");
  EXPECT_EQ(out.prompt, std::nullopt);
  ASSERT_EQ(ParsePickBody(R"({"pool":"ns/e"})", out, scratch), "");
  EXPECT_EQ(out.pool, "ns/e");
}

}  // namespace
}  // namespace eoc::server
