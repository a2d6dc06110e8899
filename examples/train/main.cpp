// train: a small character-level GPT trained on a text file (examples/train/shakespeare.txt by
// default) with kiln's modules, autograd and AdamW, on the device KILN_DEVICE names. The whole
// training step (forward, backward, optimizer update) is one CapturedStep, so after its first two
// calls every step replays the same kernels with nothing compiled or scheduled. A progress bar
// shows the loss and steps per second; at the end the validation loss is measured, the model is
// saved as a safetensors checkpoint (its vocabulary and shape in the metadata), loaded back into a
// fresh model and sampled from.
//
//   train [--text FILE] [--steps N] [--checkpoint FILE] [--generate N] [--prompt TEXT]
//         [--seed N] [--expect-loss X] [--generate-only]
//
// Exits 1 when --expect-loss is given and the validation loss is not below it, and 4 when the
// device cannot be opened here (ctest reports that as skipped). See README.md for the loss it
// reaches and how long that takes.
#include <kiln/kiln.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifndef KILN_TRAIN_TEXT
#define KILN_TRAIN_TEXT "shakespeare.txt"
#endif

namespace {

namespace nn = kiln::nn;
using kiln::Tensor;

constexpr int kSkippedExitCode = 4;

struct Options {
  std::string text = KILN_TRAIN_TEXT;
  int64_t steps = 600;
  std::string checkpoint = "train.safetensors";
  int64_t generate = 300;
  std::string prompt = "ROMEO:\n";
  uint64_t seed = 1;
  std::optional<double> expect_loss;
  bool generate_only = false;
};

// The model's shape; saved in the checkpoint's metadata so that generation can rebuild it.
struct GptShape {
  int64_t vocabulary = 0;
  int64_t block = 64;  // characters of context
  int64_t width = 96;  // embedding features
  int64_t heads = 4;
  int64_t layers = 2;
};

constexpr int64_t kBatch = 32;
constexpr double kPeakRate = 3e-3;
constexpr int64_t kWarmupSteps = 30;

// Pre-norm transformer block: x + attention(ln(x)), then x + mlp(ln(x)).
class Block : public nn::Module {
 public:
  Block(const GptShape& shape, const nn::LayerOptions& options)
      : norm_attention_(
            std::make_shared<nn::LayerNorm>(kiln::Shape{shape.width}, 1e-5, true, true, options)),
        attention_(std::make_shared<nn::MultiheadAttention>(
            shape.width, shape.heads, nn::MultiheadAttentionOptions{.batch_first = true}, options)),
        norm_mlp_(
            std::make_shared<nn::LayerNorm>(kiln::Shape{shape.width}, 1e-5, true, true, options)),
        expand_(std::make_shared<nn::Linear>(shape.width, 4 * shape.width, true, options)),
        project_(std::make_shared<nn::Linear>(4 * shape.width, shape.width, true, options)) {
    register_module("ln_1", norm_attention_);
    register_module("attn", attention_);
    register_module("ln_2", norm_mlp_);
    register_module("mlp_fc", expand_);
    register_module("mlp_proj", project_);
  }

  Tensor forward(const Tensor& x) override {
    const Tensor normed = norm_attention_->forward(x);
    const Tensor attended =
        x + attention_->forward(normed, normed, normed, std::nullopt, std::nullopt,
                                /*is_causal=*/true);
    return attended + project_->forward(expand_->forward(norm_mlp_->forward(attended)).gelu());
  }
  std::string type_name() const override { return "Block"; }

 private:
  std::shared_ptr<nn::LayerNorm> norm_attention_;
  std::shared_ptr<nn::MultiheadAttention> attention_;
  std::shared_ptr<nn::LayerNorm> norm_mlp_;
  std::shared_ptr<nn::Linear> expand_, project_;
};

// Token and position embeddings, the blocks, a final norm and a linear head: (B, T) character
// indices to (B, T, vocabulary) logits, T <= block.
class CharGpt : public nn::Module {
 public:
  CharGpt(const GptShape& shape, const nn::LayerOptions& options)
      : shape_(shape),
        tokens_(
            std::make_shared<nn::Embedding>(shape.vocabulary, shape.width, std::nullopt, options)),
        positions_(
            std::make_shared<nn::Embedding>(shape.block, shape.width, std::nullopt, options)),
        blocks_(std::make_shared<nn::Sequential>()),
        norm_(std::make_shared<nn::LayerNorm>(kiln::Shape{shape.width}, 1e-5, true, true, options)),
        head_(std::make_shared<nn::Linear>(shape.width, shape.vocabulary, false, options)),
        device_(options.device) {
    register_module("wte", tokens_);
    register_module("wpe", positions_);
    for (int64_t layer = 0; layer < shape.layers; ++layer)
      blocks_->push_back(std::make_shared<Block>(shape, options));
    register_module("h", blocks_);
    register_module("ln_f", norm_);
    register_module("lm_head", head_);
  }

  Tensor forward(const Tensor& indices) override {
    const int64_t length = indices.shape().back();
    const Tensor where = Tensor::arange(0, length, 1, kiln::dtypes::int64, device_);
    const Tensor x = tokens_->forward(indices) + positions_->forward(where);
    return head_->forward(norm_->forward(blocks_->forward(x)));
  }
  std::string type_name() const override { return "CharGpt"; }

 private:
  GptShape shape_;
  std::shared_ptr<nn::Embedding> tokens_, positions_;
  std::shared_ptr<nn::Sequential> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Linear> head_;
  std::string device_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Every distinct byte of the text, sorted: a character's index is its place here.
struct Vocabulary {
  std::string characters;
  int64_t index[256];

  explicit Vocabulary(std::string sorted) : characters(std::move(sorted)) {
    std::fill(std::begin(index), std::end(index), -1);
    for (size_t at = 0; at < characters.size(); ++at)
      index[static_cast<unsigned char>(characters[at])] = static_cast<int64_t>(at);
  }
  static Vocabulary of(const std::string& text) {
    bool seen[256] = {};
    for (unsigned char c : text) seen[c] = true;
    std::string sorted;
    for (int c = 0; c < 256; ++c)
      if (seen[c]) sorted.push_back(static_cast<char>(c));
    return Vocabulary(sorted);
  }
  std::vector<int64_t> encode(const std::string& text) const {
    std::vector<int64_t> out;
    out.reserve(text.size());
    for (unsigned char c : text) out.push_back(index[c] >= 0 ? index[c] : 0);
    return out;
  }
};

// `count` windows of block + 1 characters starting at `starts`: inputs (count, block) and the
// targets, the same shifted by one.
std::pair<Tensor, Tensor> windows(const std::vector<int64_t>& encoded,
                                  const std::vector<size_t>& starts, int64_t block,
                                  const std::string& device) {
  std::vector<int64_t> inputs, targets;
  for (size_t start : starts) {
    inputs.insert(inputs.end(), encoded.begin() + start, encoded.begin() + start + block);
    targets.insert(targets.end(), encoded.begin() + start + 1, encoded.begin() + start + block + 1);
  }
  const int64_t count = static_cast<int64_t>(starts.size());
  return {Tensor::from_vector(inputs, {count, block}, device),
          Tensor::from_vector(targets, {count, block}, device)};
}

Tensor sequence_loss(CharGpt& model, const Tensor& inputs, const Tensor& targets,
                     int64_t vocabulary) {
  return nn::cross_entropy(model(inputs).reshape({-1, vocabulary}), targets.reshape({-1}));
}

// The mean loss over windows covering the validation text, in eval mode with no gradients.
double validation_loss(CharGpt& model, const std::vector<int64_t>& encoded, size_t begin,
                       int64_t block, const std::string& device, int64_t vocabulary) {
  kiln::NoGradGuard no_grad;
  model.eval();
  std::vector<size_t> starts;
  for (size_t start = begin; start + block + 1 <= encoded.size(); start += block)
    starts.push_back(start);
  double total = 0;
  int64_t batches = 0;
  for (size_t first = 0; first + kBatch <= starts.size(); first += kBatch) {
    const std::vector<size_t> batch(starts.begin() + first, starts.begin() + first + kBatch);
    const auto [inputs, targets] = windows(encoded, batch, block, device);
    total += sequence_loss(model, inputs, targets, vocabulary).item<float>();
    ++batches;
  }
  model.train();
  return batches > 0 ? total / batches : NAN;
}

// Warm up linearly, then a cosine from the peak down to a tenth of it.
double learning_rate(int64_t step, int64_t steps) {
  if (step < kWarmupSteps) return kPeakRate * static_cast<double>(step + 1) / kWarmupSteps;
  const double progress = static_cast<double>(step - kWarmupSteps) /
                          static_cast<double>(std::max<int64_t>(steps - kWarmupSteps, 1));
  return kPeakRate * (0.1 + 0.45 * (1.0 + std::cos(M_PI * std::min(progress, 1.0))));
}

// One line, rewritten in place on a terminal; on a pipe, a line every tenth of the run.
class ProgressBar {
 public:
  explicit ProgressBar(int64_t total) : total_(total), terminal_(isatty(fileno(stderr)) != 0) {}

  void update(int64_t done, double loss, double steps_per_second) {
    const bool last = done == total_;
    if (!terminal_ && !last && done % std::max<int64_t>(total_ / 10, 1) != 0) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * done / std::max<int64_t>(total_, 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "%sstep %5lld/%lld [%s] loss %.4f  %.1f steps/s%s", terminal_ ? "\r" : "",
                 static_cast<long long>(done), static_cast<long long>(total_), bar.c_str(), loss,
                 steps_per_second, terminal_ && !last ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  int64_t total_;
  bool terminal_;
};

std::string metadata_value(const std::vector<std::pair<std::string, std::string>>& metadata,
                           const std::string& key) {
  for (const auto& [name, value] : metadata)
    if (name == key) return value;
  throw std::runtime_error("the checkpoint has no '" + key + "' in its metadata");
}

// Trains, reports and saves; returns the validation loss.
double train(const Options& options, const std::string& device) {
  const std::string text = read_file(options.text);
  const Vocabulary vocabulary = Vocabulary::of(text);
  GptShape shape;
  shape.vocabulary = static_cast<int64_t>(vocabulary.characters.size());
  const std::vector<int64_t> encoded = vocabulary.encode(text);
  if (encoded.size() < static_cast<size_t>(20 * shape.block))
    throw std::runtime_error(options.text + " is too short to train on");
  // The last tenth is held out for validation.
  const size_t split = encoded.size() - encoded.size() / 10;
  std::printf("text: %s, %zu characters (%zu for training), %lld distinct\n", options.text.c_str(),
              encoded.size(), split, static_cast<long long>(shape.vocabulary));

  kiln::Generator generator(options.seed, device);
  CharGpt model(shape, {.device = device, .generator = generator});
  const std::vector<Tensor> parameters = model.parameters();
  int64_t count = 0;
  for (const Tensor& parameter : parameters) count += parameter.numel();
  std::printf("model: %lld layers, %lld heads, width %lld, context %lld: %lld parameters\n",
              static_cast<long long>(shape.layers), static_cast<long long>(shape.heads),
              static_cast<long long>(shape.width), static_cast<long long>(shape.block),
              static_cast<long long>(count));

  kiln::optim::AdamW optimizer(parameters,
                               {.lr = learning_rate(0, options.steps), .weight_decay = 0.01});
  kiln::CapturedStep step([&](const std::vector<Tensor>& batch) {
    optimizer.zero_grad();
    Tensor loss = sequence_loss(model, batch[0], batch[1], shape.vocabulary);
    loss.backward();
    kiln::optim::clip_grad_norm(parameters, 1.0);
    optimizer.step({loss});
    return std::vector<Tensor>{loss};
  });

  std::mt19937_64 random(options.seed);
  std::uniform_int_distribution<size_t> start_at(0, split - static_cast<size_t>(shape.block) - 1);
  ProgressBar progress(options.steps);
  const auto began = std::chrono::steady_clock::now();
  double smoothed = NAN;
  for (int64_t at = 0; at < options.steps; ++at) {
    std::vector<size_t> starts(kBatch);
    for (size_t& start : starts) start = start_at(random);
    const auto [inputs, targets] = windows(encoded, starts, shape.block, device);
    optimizer.set_lr(learning_rate(at, options.steps));
    const double loss = step({inputs, targets})[0].item<float>();
    smoothed = std::isnan(smoothed) ? loss : 0.9 * smoothed + 0.1 * loss;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    progress.update(at + 1, smoothed, static_cast<double>(at + 1) / seconds);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("trained %lld steps in %.1f s (%lld kernels per step)\n",
              static_cast<long long>(options.steps), seconds,
              static_cast<long long>(step.kernels()));

  const double validation =
      validation_loss(model, encoded, split, shape.block, device, shape.vocabulary);
  std::printf("validation loss: %.4f (uniform guess: %.4f)\n", validation,
              std::log(static_cast<double>(shape.vocabulary)));

  kiln::save_safetensors(options.checkpoint, model.state_dict(),
                         {{"vocabulary", vocabulary.characters},
                          {"block", std::to_string(shape.block)},
                          {"width", std::to_string(shape.width)},
                          {"heads", std::to_string(shape.heads)},
                          {"layers", std::to_string(shape.layers)}});
  std::printf("checkpoint: %s\n", options.checkpoint.c_str());
  return validation;
}

// Loads the checkpoint into a fresh model and samples `options.generate` characters after the
// prompt, one at a time, from the softmax of the last position's logits.
void generate(const Options& options, const std::string& device) {
  const auto metadata = kiln::safetensors_metadata(options.checkpoint);
  const Vocabulary vocabulary(metadata_value(metadata, "vocabulary"));
  GptShape shape;
  shape.vocabulary = static_cast<int64_t>(vocabulary.characters.size());
  shape.block = std::stoll(metadata_value(metadata, "block"));
  shape.width = std::stoll(metadata_value(metadata, "width"));
  shape.heads = std::stoll(metadata_value(metadata, "heads"));
  shape.layers = std::stoll(metadata_value(metadata, "layers"));
  CharGpt model(shape, {.device = device});
  model.load_state_dict(kiln::load_safetensors(options.checkpoint, device));
  model.eval();
  kiln::NoGradGuard no_grad;

  // A window of exactly `block` characters, the prompt's last ones, padded on the left with
  // newlines (where the text's speeches begin), so that every sample runs the same kernels.
  std::vector<int64_t> window = vocabulary.encode(options.prompt);
  const int64_t newline = vocabulary.index[static_cast<unsigned char>('\n')];
  if (static_cast<int64_t>(window.size()) < shape.block)
    window.insert(window.begin(), static_cast<size_t>(shape.block) - window.size(),
                  std::max<int64_t>(newline, 0));
  window.erase(window.begin(), window.end() - shape.block);

  kiln::Generator generator(options.seed, device);
  kiln::CapturedStep sample([&](const std::vector<Tensor>& in) {
    const Tensor logits = model(in[0]).shrink(std::vector<std::pair<int64_t, int64_t>>{
        {0, 1}, {shape.block - 1, shape.block}, {0, shape.vocabulary}});
    return std::vector<Tensor>{kiln::random::multinomial(
        generator, logits.reshape({shape.vocabulary}).softmax(-1), 1, true)};
  });
  std::string out = options.prompt;
  for (int64_t at = 0; at < options.generate; ++at) {
    const Tensor next = sample({Tensor::from_vector(window, {1, shape.block}, device)})[0];
    const int64_t index = next.item<int64_t>();
    out.push_back(vocabulary.characters[static_cast<size_t>(index)]);
    window.erase(window.begin());
    window.push_back(index);
  }
  std::printf("--- sampled from %s ---\n%s\n---\n", options.checkpoint.c_str(), out.c_str());
}

Options parse(int argc, char** argv) {
  Options options;
  for (int at = 1; at < argc; ++at) {
    const std::string flag = argv[at];
    auto value = [&]() -> std::string {
      if (at + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
      return argv[++at];
    };
    if (flag == "--text")
      options.text = value();
    else if (flag == "--steps")
      options.steps = std::stoll(value());
    else if (flag == "--checkpoint")
      options.checkpoint = value();
    else if (flag == "--generate")
      options.generate = std::stoll(value());
    else if (flag == "--prompt")
      options.prompt = value();
    else if (flag == "--seed")
      options.seed = std::stoull(value());
    else if (flag == "--expect-loss")
      options.expect_loss = std::stod(value());
    else if (flag == "--generate-only")
      options.generate_only = true;
    else
      throw std::invalid_argument(
          "unknown option " + flag +
          "; options: --text FILE --steps N --checkpoint FILE --generate N --prompt TEXT "
          "--seed N --expect-loss X --generate-only");
  }
  if (options.steps < 1) throw std::invalid_argument("--steps must be at least 1");
  return options;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options options = parse(argc, argv);
  std::string device;
  try {
    device = kiln::default_device();
  } catch (const kiln::DeviceError& error) {
    std::printf("skipped: %s\n", error.what());
    return kSkippedExitCode;
  }
  std::printf("device: %s\n", device.c_str());
  double validation = NAN;
  if (!options.generate_only) validation = train(options, device);
  if (options.generate > 0) generate(options, device);
  if (options.expect_loss && !(validation < *options.expect_loss)) {
    std::fprintf(stderr, "FAILED: validation loss %.4f is not below %.4f\n", validation,
                 *options.expect_loss);
    return 1;
  }
  return 0;
} catch (const kiln::Error& error) {
  std::fprintf(stderr, "kiln error: %s\n", error.what());
  return 1;
} catch (const std::exception& error) {
  std::fprintf(stderr, "error: %s\n", error.what());
  return 1;
}
