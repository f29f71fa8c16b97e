#include "kube/kubeconfig_field.h"

#include <utility>

#include "common/files.h"
#include "common/text.h"
#include "kube/config.h"
#include "kube/tls_material.h"

namespace eoc::kube::kubeconfig {
namespace {

namespace fs = std::filesystem;

// Nothing read from disk is unbounded. Real kubeconfigs are kilobytes.
constexpr std::size_t kMaxKubeconfigBytes = std::size_t{16} << 20;

}  // namespace

void FailIn(const std::string& files, std::string_view message) {
  throw ConfigError("kubeconfig " + files + ": " + std::string(message));
}

Field Field::operator[](const std::string& key) const {
  std::string child = path_.empty() ? key : path_ + "." + key;
  if (!present()) return {YAML::Node(), std::move(child), source_};
  if (!node_.IsMap()) Fail("expected a map, found " + Describe());
  const YAML::Node& node = node_;  // the const operator[] does not insert the key
  return {node[key], std::move(child), source_};
}

std::vector<Field> Field::Items() const {
  std::vector<Field> items;
  if (!present()) return items;
  if (!node_.IsSequence()) Fail("expected a list, found " + Describe());
  for (const YAML::Node& item : node_) {
    items.emplace_back(item, path_ + "[" + std::to_string(items.size()) + "]", source_);
  }
  return items;
}

std::string Field::String() const {
  if (!present()) return {};
  if (!node_.IsScalar()) Fail("expected a string, found " + Describe());
  return node_.Scalar();
}

bool Field::Bool() const {
  bool value = false;
  if (!present()) return value;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, value)) {
    Fail("expected true or false, found " + Describe());
  }
  return value;
}

std::string Field::FilePath() const {
  std::string path = String();
  if (path.empty()) return path;
  return (source_->dir / path).lexically_normal().string();
}

void Field::Fail(std::string_view what) const {
  Error((path_.empty() ? std::string("top level") : path_) + ": " + std::string(what));
}

void Field::FailValue(std::string_view what) const {
  Error(path_ + " " + Quoted(String()) + " " + std::string(what));
}

void Field::Error(std::string_view message) const { FailIn(source_->file, message); }

std::string Field::Describe() const {
  if (node_.IsMap()) return "a map";
  if (node_.IsSequence()) return "a list";
  return Quoted(node_.Scalar());
}

Field ReadDocument(const std::string& file) {
  std::string error;
  const std::optional<std::string> text = ReadFileLimited(file, kMaxKubeconfigBytes, &error);
  if (!text) FailIn(file, "cannot read it: " + error);
  std::error_code ec;
  const fs::path absolute = fs::absolute(file, ec);
  auto source = std::make_shared<const Source>(Source{file, absolute.parent_path()});
  try {
    return {YAML::Load(*text), "", std::move(source)};
  } catch (const YAML::Exception& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = " at line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1);
    }
    FailIn(file, "not valid YAML" + where + ": " + e.msg);
  }
}

std::optional<Pem> ReadPem(const Field& parent, const std::string& name) {
  const Field file = parent[name];
  const Field data = parent[name + "-data"];
  const std::string path = file.FilePath();
  const std::string encoded = data.String();
  if (!path.empty() && !encoded.empty()) {
    parent.Fail("both " + name + " and " + name + "-data given; give one");
  }
  if (!encoded.empty()) {
    std::optional<std::string> decoded = Base64Decode(encoded);
    if (!decoded) data.Fail("invalid base64");
    return Pem{std::move(*decoded), data};
  }
  if (path.empty()) return std::nullopt;
  std::string error;
  std::optional<std::string> text = ReadFileLimited(path, kMaxPemFileBytes, &error);
  if (!text) file.Fail("cannot read " + path + ": " + error);
  return Pem{std::move(*text), file};
}

}  // namespace eoc::kube::kubeconfig
