// A sequence classifier's labels as config.json gives them (num_labels, id2label), read one way
// for every architecture with a classification head.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace il::models {

struct ClassifierLabels {
  int num_labels = 1;                  // num_labels, else the number of id2label entries, else 1
  std::map<int, std::string> id2label; // every index below num_labels
};

// id2label: {"0": "negative", "1": "positive"}. Keys are output indices written in decimal (JSON
// keys are strings); a key that is not one, a repeated index ("1" and "01"), a name that is not a
// string or an index past num_labels is refused, since the labels a classifier reports would
// otherwise be wrong. Errors name `src` and the field.
ClassifierLabels read_classifier_labels(const nlohmann::json& config, const std::string& src);

// num_labels alone (num_labels, else the number of id2label entries, else 1), for models whose
// id2label is not their concern.
int read_num_labels(const nlohmann::json& config, const std::string& src);

// One name per output: id2label's, else "LABEL_<i>" as transformers names them.
std::vector<std::string> label_names(const ClassifierLabels& labels);

}  // namespace il::models
