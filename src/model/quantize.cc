#include "model/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

// Byte offsets inside one block, from ggml-common.h upstream.
constexpr size_t kQ8_0Bytes = 34;   // ggml_half d; int8_t qs[32]
constexpr size_t kQ5_0Bytes = 22;   // ggml_half d; uint8_t qh[4]; uint8_t qs[16]
constexpr size_t kQ5_1Bytes = 24;   // ggml_half d, m; uint8_t qh[4]; uint8_t qs[16]
constexpr size_t kQ4_KBytes = 144;  // ggml_half d, dmin; uint8_t scales[12]; uint8_t qs[128]
constexpr size_t kQ5_KBytes = 176;  // ggml_half d, dmin; scales[12]; qh[32]; qs[128]
constexpr size_t kQ6_KBytes = 210;  // uint8_t ql[128], qh[64]; int8_t scales[16]; ggml_half d
constexpr size_t kMxfp4Bytes = 17;  // uint8_t e (E8M0); uint8_t qs[16]
constexpr size_t kQK = 256;         // QK_K
constexpr size_t kQ32 = 32;         // QK8_0, QK_MXFP4

// kvalues_mxfp4 (ggml-common.h): E2M1 values doubled, so the E8M0 scale is halved.
constexpr std::array<int8_t, 16> kMxfp4Values = {0, 1,  2,  3,  4,  6,  8,  12,
                                                 0, -1, -2, -3, -4, -6, -8, -12};

void PutHalf(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }
uint16_t GetHalf(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}
float RoundHalf(float f) { return HalfToFloat(FloatToHalf(f)); }
int Clamp(int v, int lo, int hi) { return std::min(hi, std::max(lo, v)); }

void EncodeQ8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (size_t i = 0; i < kQ32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = RoundHalf(amax / 127.0f);
  PutHalf(b, FloatToHalf(d));
  for (size_t i = 0; i < kQ32; ++i) {
    const int q = d > 0 ? static_cast<int>(std::lround(x[i] / d)) : 0;
    b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(Clamp(q, -127, 127)));
  }
}

void DecodeQ8_0(const uint8_t* b, float* y) {
  const float d = HalfToFloat(GetHalf(b));
  for (size_t i = 0; i < kQ32; ++i) y[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
}

// get_scale_min_k4 in ggml-quants.c: 8 six-bit scales and mins packed in 12 bytes.
void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K and Q5_K: 8 sub-blocks of 32, x ~= d*sc*q - dmin*m with q in 0..qmax,
// sc and m 6-bit. Writes d, dmin and the 12 scale bytes at b[0..16) and the
// quants (not yet packed) to q.
void EncodeScaleMinK(const float* x, int qmax, uint8_t* b, std::array<uint8_t, kQK>& q) {
  std::array<float, 8> scale{}, offset{};
  for (size_t j = 0; j < 8; ++j) {
    float mn = x[32 * j], mx = x[32 * j];
    for (size_t l = 1; l < 32; ++l) {
      mn = std::min(mn, x[32 * j + l]);
      mx = std::max(mx, x[32 * j + l]);
    }
    mn = std::min(mn, 0.0f);  // the format subtracts a non-negative min
    scale[j] = (mx - mn) / static_cast<float>(qmax);
    offset[j] = -mn;
  }
  const float d = RoundHalf(*std::max_element(scale.begin(), scale.end()) / 63.0f);
  const float dmin = RoundHalf(*std::max_element(offset.begin(), offset.end()) / 63.0f);
  PutHalf(b, FloatToHalf(d));
  PutHalf(b + 2, FloatToHalf(dmin));
  std::array<int, 8> ls{}, lm{};
  for (size_t j = 0; j < 8; ++j) {
    // Round the scale up so that the sub-block's range still fits in 0..qmax.
    ls[j] = d > 0 ? Clamp(static_cast<int>(std::ceil(scale[j] / d)), 0, 63) : 0;
    lm[j] = dmin > 0 ? Clamp(static_cast<int>(std::lround(offset[j] / dmin)), 0, 63) : 0;
  }
  uint8_t* scales = b + 4;
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(ls[j]);
      scales[j + 4] = static_cast<uint8_t>(lm[j]);
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
      scales[j] = static_cast<uint8_t>(scales[j] | ((lm[j] >> 4) << 6));
    }
  }
  for (size_t j = 0; j < 8; ++j) {
    const float sc = d * static_cast<float>(ls[j]);
    const float m = dmin * static_cast<float>(lm[j]);
    for (size_t l = 0; l < 32; ++l) {
      const int v = sc > 0 ? static_cast<int>(std::lround((x[32 * j + l] + m) / sc)) : 0;
      q[32 * j + l] = static_cast<uint8_t>(Clamp(v, 0, qmax));
    }
  }
}

// The low nibbles of a K-quant block: each 64 values share 32 bytes, the first
// 32 in the low and the next 32 in the high nibbles.
void PackNibblesK(const std::array<uint8_t, kQK>& q, uint8_t* qs) {
  for (size_t j = 0; j < kQK; j += 64) {
    for (size_t l = 0; l < 32; ++l) {
      qs[j / 2 + l] = static_cast<uint8_t>((q[j + l] & 0xF) | ((q[j + l + 32] & 0xF) << 4));
    }
  }
}

void EncodeQ4_K(const float* x, uint8_t* b) {
  std::array<uint8_t, kQK> q{};
  EncodeScaleMinK(x, 15, b, q);
  PackNibblesK(q, b + 16);
}

// Q5_K: as Q4_K with q in 0..31; the fifth bits sit in qh[32], bit 2*c of
// qh[l] for value 64*c + l and bit 2*c + 1 for value 64*c + 32 + l.
void EncodeQ5_K(const float* x, uint8_t* b) {
  std::array<uint8_t, kQK> q{};
  EncodeScaleMinK(x, 31, b, q);
  uint8_t* qh = b + 16;
  std::memset(qh, 0, 32);
  for (size_t c = 0; c < 4; ++c) {
    for (size_t l = 0; l < 32; ++l) {
      const int lo = (q[64 * c + l] >> 4) << (2 * c);
      const int hi = (q[64 * c + 32 + l] >> 4) << (2 * c + 1);
      qh[l] = static_cast<uint8_t>(qh[l] | lo | hi);
    }
  }
  PackNibblesK(q, b + 48);
}

void DecodeQ5_K(const uint8_t* b, float* y) {
  const float d = HalfToFloat(GetHalf(b));
  const float dmin = HalfToFloat(GetHalf(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  for (int c = 0; c < 4; ++c) {
    int sc, m;
    ScaleMinK4(2 * c, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    ScaleMinK4(2 * c + 1, scales, &sc, &m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (size_t l = 0; l < 32; ++l) {
      const int v = (ql[l] & 0xF) | (((qh[l] >> (2 * c)) & 1) << 4);
      *y++ = d1 * static_cast<float>(v) - m1;
    }
    for (size_t l = 0; l < 32; ++l) {
      const int v = (ql[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
      *y++ = d2 * static_cast<float>(v) - m2;
    }
    ql += 32;
  }
}

// Q5_0 and Q5_1: 32 values, 5-bit quants; the low nibbles of values j and j+16
// share qs[j], and bit j of the little-endian 32-bit qh is the fifth bit of value j.
void PackQ5(const std::array<uint8_t, kQ32>& q, uint8_t* qh, uint8_t* qs) {
  uint32_t h = 0;
  for (size_t j = 0; j < kQ32; ++j) h |= static_cast<uint32_t>(q[j] >> 4) << j;
  for (size_t i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(h >> (8 * i));
  for (size_t j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
  }
}

std::array<uint8_t, kQ32> UnpackQ5(const uint8_t* qh, const uint8_t* qs) {
  uint32_t h = 0;
  for (size_t i = 0; i < 4; ++i) h |= static_cast<uint32_t>(qh[i]) << (8 * i);
  std::array<uint8_t, kQ32> q{};
  for (size_t j = 0; j < 16; ++j) {
    q[j] = static_cast<uint8_t>((qs[j] & 0xF) | (((h >> j) & 1) << 4));
    q[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4));
  }
  return q;
}

// Q5_0: x ~= d*(q-16), q in 0..31.
void EncodeQ5_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (size_t i = 0; i < kQ32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = RoundHalf(amax / 15.0f);
  PutHalf(b, FloatToHalf(d));
  std::array<uint8_t, kQ32> q{};
  for (size_t i = 0; i < kQ32; ++i) {
    const int v = d > 0 ? static_cast<int>(std::lround(x[i] / d)) : 0;
    q[i] = static_cast<uint8_t>(Clamp(v, -16, 15) + 16);
  }
  PackQ5(q, b + 2, b + 6);
}

void DecodeQ5_0(const uint8_t* b, float* y) {
  const float d = HalfToFloat(GetHalf(b));
  const auto q = UnpackQ5(b + 2, b + 6);
  for (size_t i = 0; i < kQ32; ++i) y[i] = d * static_cast<float>(static_cast<int>(q[i]) - 16);
}

// Q5_1: x ~= d*q + m, q in 0..31.
void EncodeQ5_1(const float* x, uint8_t* b) {
  float mn = x[0], mx = x[0];
  for (size_t i = 1; i < kQ32; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  const float d = RoundHalf((mx - mn) / 31.0f);
  const float m = RoundHalf(mn);
  PutHalf(b, FloatToHalf(d));
  PutHalf(b + 2, FloatToHalf(m));
  std::array<uint8_t, kQ32> q{};
  for (size_t i = 0; i < kQ32; ++i) {
    const int v = d > 0 ? static_cast<int>(std::lround((x[i] - m) / d)) : 0;
    q[i] = static_cast<uint8_t>(Clamp(v, 0, 31));
  }
  PackQ5(q, b + 4, b + 8);
}

void DecodeQ5_1(const uint8_t* b, float* y) {
  const float d = HalfToFloat(GetHalf(b));
  const float m = HalfToFloat(GetHalf(b + 2));
  const auto q = UnpackQ5(b + 4, b + 8);
  for (size_t i = 0; i < kQ32; ++i) y[i] = d * static_cast<float>(q[i]) + m;
}

void DecodeQ4_K(const uint8_t* b, float* y) {
  const float d = HalfToFloat(GetHalf(b));
  const float dmin = HalfToFloat(GetHalf(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  int is = 0;
  for (size_t j = 0; j < kQK; j += 64) {
    int sc, m;
    ScaleMinK4(is, scales, &sc, &m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    ScaleMinK4(is + 1, scales, &sc, &m);
    const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
    for (size_t l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
    for (size_t l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

// Q6_K: 16 sub-blocks of 16, x ~= d*sc*(q-32) with q 6-bit and sc int8.
void EncodeQ6_K(const float* x, uint8_t* b) {
  std::array<float, 16> scale{};
  for (size_t j = 0; j < 16; ++j) {
    float amax = 0;
    for (size_t l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * j + l]));
    scale[j] = amax / 31.0f;
  }
  const float d = RoundHalf(*std::max_element(scale.begin(), scale.end()) / 127.0f);
  std::array<int, 16> sc{};
  for (size_t j = 0; j < 16; ++j) {
    sc[j] = d > 0 ? Clamp(static_cast<int>(std::ceil(scale[j] / d)), 0, 127) : 0;
  }
  std::array<uint8_t, kQK> q{};
  for (size_t i = 0; i < kQK; ++i) {
    const float s = d * static_cast<float>(sc[i / 16]);
    const int v = s > 0 ? static_cast<int>(std::lround(x[i] / s)) : 0;
    q[i] = static_cast<uint8_t>(Clamp(v, -32, 31) + 32);
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  for (size_t n = 0; n < 2; ++n) {
    const uint8_t* qn = q.data() + 128 * n;
    for (size_t l = 0; l < 32; ++l) {
      const uint8_t q1 = qn[l], q2 = qn[l + 32], q3 = qn[l + 64], q4 = qn[l + 96];
      ql[64 * n + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[64 * n + l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[32 * n + l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
  for (size_t j = 0; j < 16; ++j) b[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc[j]));
  PutHalf(b + 208, FloatToHalf(d));
}

void DecodeQ6_K(const uint8_t* b, float* y) {
  const float d = HalfToFloat(GetHalf(b + 208));
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (size_t n = 0; n < kQK; n += 128) {
    for (size_t l = 0; l < 32; ++l) {
      const size_t is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is] * q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2] * q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4] * q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6] * q4);
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

// MXFP4: 32 values, one E8M0 exponent; value = kvalues[q] * 2^(e-128).
void EncodeMxfp4(const float* x, uint8_t* b) {
  float amax = 0;
  for (size_t i = 0; i < kQ32; ++i) amax = std::max(amax, std::fabs(x[i]));
  int e = 127;
  if (amax > 0) e = Clamp(128 + static_cast<int>(std::ceil(std::log2(amax / 12.0f))), 2, 254);
  b[0] = static_cast<uint8_t>(e);
  const float inv = std::ldexp(1.0f, 128 - e);
  std::array<uint8_t, kQ32> q{};
  for (size_t i = 0; i < kQ32; ++i) {
    const float v = x[i] * inv;
    size_t best = 0;
    for (size_t k = 1; k < kMxfp4Values.size(); ++k) {
      if (std::fabs(v - kMxfp4Values[k]) < std::fabs(v - kMxfp4Values[best])) best = k;
    }
    q[i] = static_cast<uint8_t>(best);
  }
  for (size_t j = 0; j < 16; ++j) b[1 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

void DecodeMxfp4(const uint8_t* b, float* y) {
  const float d = std::ldexp(1.0f, static_cast<int>(b[0]) - 128);
  for (size_t j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kMxfp4Values[b[1 + j] & 0xF]);
    y[j + 16] = d * static_cast<float>(kMxfp4Values[b[1 + j] >> 4]);
  }
}

struct Codec {
  uint32_t type;
  size_t block;
  size_t bytes;
  void (*encode)(const float*, uint8_t*);
  void (*decode)(const uint8_t*, float*);
};

constexpr std::array<Codec, 7> kCodecs = {{
    {ggml_type::kQ8_0, kQ32, kQ8_0Bytes, EncodeQ8_0, DecodeQ8_0},
    {ggml_type::kQ5_0, kQ32, kQ5_0Bytes, EncodeQ5_0, DecodeQ5_0},
    {ggml_type::kQ5_1, kQ32, kQ5_1Bytes, EncodeQ5_1, DecodeQ5_1},
    {ggml_type::kQ4_K, kQK, kQ4_KBytes, EncodeQ4_K, DecodeQ4_K},
    {ggml_type::kQ5_K, kQK, kQ5_KBytes, EncodeQ5_K, DecodeQ5_K},
    {ggml_type::kQ6_K, kQK, kQ6_KBytes, EncodeQ6_K, DecodeQ6_K},
    {ggml_type::kMXFP4, kQ32, kMxfp4Bytes, EncodeMxfp4, DecodeMxfp4},
}};

const Codec* FindCodec(uint32_t type) {
  for (const auto& c : kCodecs) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

Status CheckSizes(uint32_t type, size_t n, size_t bytes) {
  const auto info = GgmlTypeById(type);
  if (!info || !CanQuantize(type)) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("no encoder for ggml type {}; use f32, f16, bf16, q8_0, q5_0, "
                             "q5_1, q4_K, q5_K, q6_K or mxfp4",
                             type));
  }
  const auto row = GgmlRowBytes(*info, n);
  if (!row) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} values are not a whole number of {} blocks of {}", n, info->name,
                             info->block_size));
  }
  if (*row != bytes) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("{} values of {} need {} bytes, buffer has {}", n, info->name, *row, bytes));
  }
  return OkStatus();
}

}  // namespace

uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds past 65504
  if (abs < 0x38800000u) {  // below 2^-14: subnormal half, exact via float arithmetic
    const float mag = std::bit_cast<float>(abs);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(mag * 16777216.0f)));
  }
  uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even
  r -= (127u - 15u) << 23;
  return static_cast<uint16_t>(sign | (r >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t FloatToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float Bf16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

bool CanQuantize(uint32_t t) {
  return t == ggml_type::kF32 || t == ggml_type::kF16 || t == ggml_type::kBF16 ||
         FindCodec(t) != nullptr;
}

Status QuantizeRow(uint32_t type, std::span<const float> src, std::span<uint8_t> dst) {
  MOETUNE_TRY(CheckSizes(type, src.size(), dst.size()));
  if (type == ggml_type::kF32) {
    std::memcpy(dst.data(), src.data(), dst.size());
  } else if (type == ggml_type::kF16 || type == ggml_type::kBF16) {
    for (size_t i = 0; i < src.size(); ++i) {
      PutHalf(dst.data() + 2 * i,
              type == ggml_type::kF16 ? FloatToHalf(src[i]) : FloatToBf16(src[i]));
    }
  } else {
    const Codec* c = FindCodec(type);
    for (size_t i = 0, n = src.size() / c->block; i < n; ++i) {
      c->encode(src.data() + i * c->block, dst.data() + i * c->bytes);
    }
  }
  return OkStatus();
}

Status DequantizeRow(uint32_t type, std::span<const uint8_t> src, std::span<float> dst) {
  MOETUNE_TRY(CheckSizes(type, dst.size(), src.size()));
  if (type == ggml_type::kF32) {
    std::memcpy(dst.data(), src.data(), src.size());
  } else if (type == ggml_type::kF16 || type == ggml_type::kBF16) {
    for (size_t i = 0; i < dst.size(); ++i) {
      const uint16_t h = GetHalf(src.data() + 2 * i);
      dst[i] = type == ggml_type::kF16 ? HalfToFloat(h) : Bf16ToFloat(h);
    }
  } else {
    const Codec* c = FindCodec(type);
    for (size_t i = 0, n = dst.size() / c->block; i < n; ++i) {
      c->decode(src.data() + i * c->bytes, dst.data() + i * c->block);
    }
  }
  return OkStatus();
}

}  // namespace moetune
