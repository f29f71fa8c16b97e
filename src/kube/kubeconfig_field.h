// Internal to src/kube's kubeconfig reading: a node of a kubeconfig document with its path from
// the root (e.g. clusters[0].cluster.server), so that every error names the file and the field.
// Reading checks the node's type, so a wrong type is reported by name rather than escaping as a
// yaml-cpp exception. Absent and null nodes read as empty, as they do for kubectl.
//
//   const Field root = ReadDocument("/root/.kube/config");     // throws ConfigError
//   const std::string server = root["clusters"].Items()[0]["cluster"]["server"].String();
//   // "kubeconfig /root/.kube/config: clusters[0].cluster.server: expected a string, found a list"
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace eoc::kube::kubeconfig {

// Every kubeconfig error starts by naming the file (or the merged files): throws ConfigError
// "kubeconfig FILES: message".
[[noreturn]] void FailIn(const std::string& files, std::string_view message);

// One kubeconfig file: its name as given (for messages) and its folder, against which relative
// paths inside it are resolved (as kubectl resolves them).
struct Source {
  std::string file;
  std::filesystem::path dir;
};

class Field {
 public:
  Field(const YAML::Node& node, std::string path, std::shared_ptr<const Source> source)
      : node_(node), path_(std::move(path)), source_(std::move(source)) {}

  bool present() const { return node_.IsDefined() && !node_.IsNull(); }
  const std::string& path() const { return path_; }
  // The last part of the path ("client-key-data"), to name the field among its siblings.
  std::string name() const { return path_.substr(path_.rfind('.') + 1); }
  const Source& source() const { return *source_; }

  // The member `key` of this map (absent when this is absent).
  Field operator[](const std::string& key) const;
  // The items of this list (none when this is absent).
  std::vector<Field> Items() const;
  std::string String() const;
  bool Bool() const;
  // A file named by this field, relative to the kubeconfig's folder unless absolute; "" if absent.
  std::string FilePath() const;

  // "kubeconfig FILE: PATH: what".
  [[noreturn]] void Fail(std::string_view what) const;
  // "kubeconfig FILE: PATH "value" what", for a value that is present but wrong.
  [[noreturn]] void FailValue(std::string_view what) const;

 private:
  [[noreturn]] void Error(std::string_view message) const;
  std::string Describe() const;

  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const Source> source_;
};

// Reads and parses one kubeconfig file (bounded in size); its root field.
Field ReadDocument(const std::string& file);

// A PEM given in a kubeconfig, and the field that gave it.
struct Pem {
  std::string text;
  Field field;
};

// `name` (a file) or `name`-data (base64) of `parent`, as kubeconfig gives the CA and the client
// certificate and key; nullopt when neither is given. Both given, bad base64 or an unreadable file
// are errors.
std::optional<Pem> ReadPem(const Field& parent, const std::string& name);

}  // namespace eoc::kube::kubeconfig
