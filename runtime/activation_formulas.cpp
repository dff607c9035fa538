#include "runtime/activation_formulas.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "runtime/byte_size.h"

namespace minitorch::runtime {

ActivationShape activation_shape(const nn::GPTConfig& model, std::int64_t B, bool half, std::int64_t segment,
                                 bool inputs_on_host) {
  return {.B = B, .T = model.block_size, .C = model.n_embd, .H = model.n_head, .L = model.n_layer,
          .V = model.vocab_size, .element = half ? 2 : 4, .segment = segment,
          .inputs_on_host = segment > 0 && inputs_on_host};
}

ActivationEstimate activation_bytes(const ActivationShape& s) {
  if (s.B < 1 || s.T < 1 || s.C < 1 || s.H < 1 || s.L < 1 || s.V < 1 || s.segment < 0 || s.segment > s.L ||
      (s.element != 2 && s.element != 4))
    throw std::invalid_argument("activation_bytes: shapes must be >= 1, the element 2 or 4 bytes, the segment 0..L");
  const double e = s.element, B = static_cast<double>(s.B), T = static_cast<double>(s.T), C = static_cast<double>(s.C),
               H = static_cast<double>(s.H), V = static_cast<double>(s.V), BTC = B * T * C, BT = B * T;
  const bool half = s.element == 2;
  ActivationEstimate a;
  a.block = e * (16 * BTC + B * H * T * T) + 4 * 4 * BT;  // lesson 08's count
  a.input = e * BTC;
  // ln_f's input, output and statistics, then the larger of two moments: the loss's backward (the logits, their
  // gradient, in 16-bit their f32 copy) and lm_head's (the logits' gradient, the tied weight's V·C gradient and
  // ln_f's output gradient, all f32; in 16-bit the logits are still held).
  a.logits = (e + 4 + (half ? 4 : 0)) * BT * V;
  a.lm_head = (half ? e * BT * V : 0) + 4 * BT * V + 4 * V * C + 4 * BTC;
  a.head = 2 * e * BTC + 2 * 4 * BT + std::max(a.logits, a.lm_head);
  a.backward = (half ? 9 : 5) * 4 * BTC + 4 * 4 * C * C + (half ? 0 : 4 * C);
  a.always = 4 * T + 4;
  if (s.segment == 0) {
    a.inputs_kept = 0, a.blocks_held = s.L;
    a.blocks_head = a.blocks_block = static_cast<double>(s.L) * a.block;
  } else {
    const std::int64_t k = s.segment, segments = (s.L + k - 1) / k;
    a.blocks_head = s.inputs_on_host ? 0 : static_cast<double>(segments) * a.input;
    for (std::int64_t j = 0; j < segments; ++j) {  // recomputing segment j: the j inputs before it, its own, its k_j blocks
      const std::int64_t held = std::min(k, s.L - j * k);
      const std::int64_t inputs = s.inputs_on_host ? 1 : j + 1;
      const double bytes = static_cast<double>(inputs) * a.input + static_cast<double>(held) * a.block;
      if (bytes > a.blocks_block) a.blocks_block = bytes, a.inputs_kept = inputs, a.blocks_held = held;
    }
  }
  return a;
}

std::string activation_text(const ActivationShape& s) {
  const ActivationEstimate a = activation_bytes(s);
  const auto n = [](double v) { return std::to_string(static_cast<long long>(v)); };
  const std::string e = std::to_string(s.element);
  const bool half = s.element == 2;
  std::ostringstream os;
  os << "a = " << e << "·(16·BTC + B·H·T²) + 16·BT = " << n(a.block) << " B per block";
  if (s.segment > 0) os << ", x = " << e << "·BTC = " << n(a.input) << " B per input kept";
  if (a.head_phase() >= a.block_phase()) {
    os << "; the peak, in the head's backward: ";
    if (s.segment == 0) os << "L·a (" << s.L << " x " << n(a.block) << ")";
    else if (s.inputs_on_host) os << "no input (on the host)";
    else os << "the inputs (" << (s.L + s.segment - 1) / s.segment << " x " << n(a.input) << ")";
    os << " + the head " << n(a.head) << " (ln_f 2·" << e << "·BTC + 8·BT; ";
    if (a.logits >= a.lm_head) os << "the logits " << e << "·BTV, their gradient 4·BTV" << (half ? ", their f32 copy 4·BTV" : "");
    else
      os << (half ? "the logits 2·BTV, " : "") << "the logits' gradient 4·BTV, the tied weight's gradient 4·VC, ln_f's "
         << "output gradient 4·BTC";
    os << ")";
  } else {
    os << "; the peak, in the last block's backward: ";
    if (s.segment == 0) os << "L·a (" << s.L << " x " << n(a.block) << ")";
    else os << "the inputs and the segment recomputed (" << a.inputs_kept << " x " << n(a.input) << " + " << a.blocks_held
            << " x " << n(a.block) << ")";
    os << " + its working set " << n(a.backward) << " (gradients in f32 " << (half ? 9 : 5)
       << "·4·BTC, c_proj's weight gradient 4·4C²" << (half ? "" : ", its bias 4C") << ")";
  }
  os << " + " << n(a.always) << " (positions 4T, the loss) = " << format_mib(a.peak());
  return os.str();
}

}  // namespace minitorch::runtime
