#pragma once
// kiln::Tensor: a lazily evaluated n-dimensional array on one device.
//
// A Tensor is a small handle: copying it is cheap and never copies data. Operations build an
// expression graph; nothing runs until a value is needed (`realize`, `to_vector`, `item`). Then
// kiln fuses the graph into few kernels, compiles them for the tensor's device and runs them.
//
// Every operation checks its arguments when it is called and throws a kiln::Error subclass
// (ShapeError, DTypeError, DeviceError) naming the operation, the operands' shapes and dtypes and
// what would be valid; the operands stay usable. Negative axes count from the end.
//
// Threads: a Tensor may be copied to other threads, and any thread may use any handle, realize
// included, while others use copies of it: the value a handle refers to changes only from its
// graph to its realized buffer, under a lock. Realizations in different threads run at the same
// time (one serving requests from several threads, or one feeding a GPU while another works on
// the CPU); each device runs the kernels it is given in the order they reach it. Two threads
// that realize the same unrealized value at once may both compute it.
//
// Semantics worth knowing:
//   * Broadcasting follows NumPy. Mixed dtypes promote as kiln/dtype.h describes; a host scalar
//     keeps the tensor's dtype, at the precision that dtype computes in (float32 for the half
//     types; a float32 tensor times 1e39 is +-inf), except that with a bool tensor an integral
//     scalar gives int32 for arithmetic, and with a bool or integer tensor a non-integral scalar
//     gives float32.
//   * Sizes: a tensor holds at most 2^60 elements; larger or negative shapes are a ShapeError.
//     A size may be a variable bound to a value (kiln/variable.h): reshape, expand, shrink and
//     the creation functions take Dims; shape() gives the values, dims() the expressions. The
//     kernels are compiled for the variable, so another value compiles nothing.
//   * Integer arithmetic wraps (two's complement). Integer `/` truncates toward zero and `%` takes
//     the sign of the dividend, as in C; dividing an integer by zero gives 0.
//   * Float-to-integer casts truncate toward zero and saturate at the target's range; NaN gives 0.
//   * float16 and bfloat16 are stored in 16 bits and computed in float32 inside a kernel; a
//     half value is rounded to its dtype wherever it is stored, compared or cast, so fusing two
//     ops never changes a comparison.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/variable.h>

namespace kiln {

using Shape = std::vector<int64_t>;
class UOp;
class TensorState;
namespace indexing {
class TensorIndex;
}

// An integer type (not bool) that names one axis; see Tensor::sum(Axis).
template <typename Axis>
using OneAxis = std::enable_if_t<std::is_integral_v<Axis> && !std::is_same_v<Axis, bool>>;

class Tensor {
 public:
  // An empty tensor, for a variable assigned later (`Tensor total; ... total = x.sum();`). It
  // holds no value: it may only be assigned, copied, destroyed and asked `defined()`; every other
  // use throws a kiln::Error saying the tensor is empty.
  Tensor() = default;
  // False for an empty (default-constructed) tensor, true for every other.
  bool defined() const { return state_ != nullptr; }

  // ---- creation ----
  template <typename T>
  static Tensor from_vector(const std::vector<T>& data, Shape shape,
                            const std::string& device = "");
  static Tensor full(Shape shape, double value, DType dtype = dtypes::float32,
                     const std::string& device = "");
  // A host value that changes between realizes (a learning rate, a step's scale): a 0-d tensor
  // whose value is held in a buffer, which kernels read, so another value compiles nothing. A
  // number written into an expression (x * 0.5f) or made by full() is a constant compiled into
  // each kernel that uses it (folded where it is 0, 1 and the like): every new value compiles
  // new kernels. float64 holds the value as given; float32 rounds it to nearest; float16 and
  // bfloat16 get that float32 rounded as a cast rounds. An integer dtype must hold it exactly (a
  // DTypeError otherwise).
  static Tensor scalar(double value, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor zeros(Shape shape, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor ones(Shape shape, DType dtype = dtypes::float32, const std::string& device = "");
  // The same with sizes that may be bound variables (kiln/variable.h). A braced list of sizes
  // picks these; a Shape the ones above.
  static Tensor full(const DimShape& shape, double value, DType dtype = dtypes::float32,
                     const std::string& device = "");
  static Tensor full(std::initializer_list<Dim> shape, double value, DType dtype = dtypes::float32,
                     const std::string& device = "") {
    return full(DimShape(shape), value, dtype, device);
  }
  static Tensor zeros(const DimShape& shape, DType dtype = dtypes::float32,
                      const std::string& device = "");
  static Tensor ones(const DimShape& shape, DType dtype = dtypes::float32,
                     const std::string& device = "");
  static Tensor zeros(std::initializer_list<Dim> shape, DType dtype = dtypes::float32,
                      const std::string& device = "") {
    return zeros(DimShape(shape), dtype, device);
  }
  static Tensor ones(std::initializer_list<Dim> shape, DType dtype = dtypes::float32,
                     const std::string& device = "") {
    return ones(DimShape(shape), dtype, device);
  }
  // 0, 1, ..., stop - 1 as int32.
  static Tensor arange(int64_t stop, const std::string& device = "");
  static Tensor arange(int64_t start, int64_t stop, int64_t step = 1,
                       const std::string& device = "");
  // start, start + step, ... up to (not including) stop, in `dtype` (any but bool). An integer
  // dtype must hold every value: arange(0, 1LL << 32) needs int64 (a DTypeError says so).
  static Tensor arange(int64_t start, int64_t stop, int64_t step, DType dtype,
                       const std::string& device = "");
  // 0, 1, ..., stop - 1 for a size that may be a bound variable (kiln/variable.h): one kernel
  // serves every value. `dtype` must hold the variable's largest value.
  static Tensor arange(const Dim& stop, DType dtype, const std::string& device = "");
  // Uniform in [0, 1), float32; the same values for the same seed on every device.
  static Tensor rand(Shape shape, uint64_t seed, const std::string& device = "");
  static Tensor eye(int64_t n, DType dtype = dtypes::float32, const std::string& device = "");

  // ---- properties ----
  // The sizes, bound variables at their values.
  const Shape& shape() const;
  // The sizes as given: numbers, or expressions over bound variables.
  DimShape dims() const;
  // "(n=5, 16)".
  std::string shape_string() const;
  DType dtype() const;
  const std::string& device() const;
  int64_t numel() const;
  int64_t ndim() const;

  // ---- elementwise ----
  Tensor operator-() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor exp2() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor reciprocal() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu() const;  // exact (erf) form, as PyTorch's default
  Tensor silu() const;
  Tensor erf() const;
  // The C library's functions (integer and bool inputs compute in float32): NaN outside their
  // domains (asin and acos beyond [-1, 1], acosh below 1, atanh beyond [-1, 1], log10 and log1p
  // below 0 and -1), +-inf at its edges. log1p and expm1 keep full accuracy near 0, where
  // log(1 + x) and exp(x) - 1 lose it all.
  Tensor asin() const;
  Tensor acos() const;
  Tensor atan() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor log10() const;
  Tensor log1p() const;
  Tensor expm1() const;
  // x * x in the tensor's own dtype (bool in int32, wrapping as integer multiplication does).
  Tensor square() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half to even
  Tensor trunc() const;
  Tensor logical_not() const;
  // Tests of float values, as bool; every integer and bool is finite.
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  // min(max(x, low), high), as PyTorch: NaN stays NaN, a NaN bound makes every element NaN, and
  // low > high gives high everywhere. The bounds follow the host-scalar dtype rules (a fractional
  // bound on an integer tensor gives float32); low = -inf or high = +inf leaves that side open,
  // and so does a bound past the end of an integer dtype's range on its own side. Bounds that
  // leave an integer tensor no value (uint8 clamped to [300, 400]) are a DTypeError.
  Tensor clamp(double low, double high) const;
  // Floats raise as C's pow. Integers raise exactly in their own dtype (bool in int32), wrapping
  // modulo 2^bits as integer multiplication does (pow(int64 3, 35) is 50031545098999707); a
  // negative exponent gives 1 / x^-n truncated toward zero, as integer division: 1 for x = 1,
  // +-1 for x = -1, else 0. An integral host exponent keeps an integer tensor's dtype (it is taken
  // in that dtype, as any host scalar); a fractional one gives float32.
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(double exponent) const;
  Tensor cast(DType dtype) const;
  // The same bits read as `dtype`, of the same size (NumPy's view(dtype), PyTorch's
  // Tensor.view(dtype) for equal sizes): float32 <-> int32 / uint32, float64 <-> int64 / uint64,
  // float16 / bfloat16 <-> int16 / uint16 and each other, integers of one size; lazy and fused
  // like any elementwise op. A float16 NaN's payload is not kept (its value passes through
  // float32 in a kernel: any NaN becomes the quiet NaN of its sign); a bfloat16 NaN keeps its
  // payload with the quiet bit set. bool, or dtypes of two sizes, is a DTypeError.
  Tensor bitcast(DType dtype) const;

  // ---- movement (metadata only) ----
  // Sizes may be bound variables in reshape, expand and shrink (see kiln/variable.h).
  Tensor reshape(Shape shape) const;  // one entry may be -1
  Tensor reshape(const DimShape& shape) const;
  Tensor reshape(std::initializer_list<Dim> shape) const { return reshape(DimShape(shape)); }
  Tensor permute(std::vector<int64_t> axes) const;
  Tensor transpose(int64_t axis0 = -2, int64_t axis1 = -1) const;
  Tensor expand(Shape shape) const;  // -1 keeps a size
  Tensor expand(const DimShape& shape) const;
  Tensor expand(std::initializer_list<Dim> shape) const { return expand(DimShape(shape)); }
  // The value keeps the tensor's dtype: on an integer or bool tensor it must be a whole number
  // (else a DTypeError), converted as a cast would (wrapping: -2 in uint8 is 254; non-zero is
  // true); on a float tensor it is rounded to the dtype (-0.0 stays -0.0, 1e39 in float32 is inf).
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> before_after, double value = 0) const;
  Tensor pad(const std::vector<std::pair<Dim, Dim>>& before_after, double value = 0) const;
  Tensor pad(std::initializer_list<std::pair<Dim, Dim>> before_after, double value = 0) const {
    return pad(std::vector<std::pair<Dim, Dim>>(before_after), value);
  }
  // The range [start, end) of each axis, in order; axes after the given pairs keep their whole
  // range. 0 <= start <= end <= size, else a ShapeError (slice() clamps, as Python does).
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> start_end) const;
  Tensor shrink(const std::vector<std::pair<Dim, Dim>>& start_end) const;
  Tensor shrink(std::initializer_list<std::pair<Dim, Dim>> start_end) const {
    return shrink(std::vector<std::pair<Dim, Dim>>(start_end));
  }
  Tensor flip(std::vector<int64_t> axes) const;
  // Python's x[start:stop:step] along one axis, as a view (no data moves): an omitted start or
  // stop is the whole range in the step's direction, a negative one counts from the end, and
  // one past either end is clamped to it (an empty result, not an error). step may be negative
  // (x[::-1] reverses), never 0. On an axis of variable size only the whole range is taken.
  Tensor slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop,
               int64_t step = 1) const;
  // x[index] along `axis`: that position (negative from the end), the axis dropped. An index
  // outside [-size, size) is an IndexError.
  Tensor select(int64_t axis, int64_t index) const;
  // The same at a position given by a bound Variable (pos.bind(t), or an expression of one such
  // as pos.bind(t) + 1): the kernels that read or write the selection are compiled for the
  // variable, so every value of it runs one kernel (a key/value cache written a position per
  // token). Every value the variable's bounds allow must lie in [0, size) (no counting from the
  // end): else an IndexError naming the bounds and the axis.
  Tensor select(int64_t axis, const Dim& index) const;
  // PyTorch's x.index({...}) (see kiln::indexing below): one entry per axis from the first, each
  // an integer (select: the axis is dropped), a Slice (the axis kept), a Tensor of integer
  // indices (take: the axis replaced by the index's axes), or Ellipsis (the axes it skips kept
  // whole; at most one). Axes after the entries are kept whole. At most one Tensor entry.
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor squeeze() const;  // every size-1 axis
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor flatten(int64_t start_axis = 0, int64_t end_axis = -1) const;
  // Forces a row-major copy in its own buffer when realized.
  Tensor contiguous() const;

  // ---- reductions (no axes = every axis) ----
  // Float sums may add in any order. Sums of more than 4096 terms add blocks of about sqrt(n)
  // terms first, so the error is at most about 2 sqrt(n) ulp times the sum of |x| (a plain loop's
  // bound grows with n). max and min return NaN if any element is NaN; the sign of a zero result
  // is unspecified when both -0.0 and +0.0 occur.
  Tensor sum(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor min(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor prod(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  // Bessel's correction (divide by n - correction), as PyTorch.
  Tensor var(std::vector<int64_t> axes = {}, bool keepdim = false, int64_t correction = 1) const;
  Tensor std(std::vector<int64_t> axes = {}, bool keepdim = false, int64_t correction = 1) const;
  // Whether any / every element is non-zero (NaN counts as non-zero), as bool. Over no elements
  // any is false and all is true.
  Tensor any(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor all(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  // One axis: x.sum(0) is x.sum({0}). Templates, so that a braced list (x.sum({}) for every axis,
  // x.sum({0, 1})) still means the list.
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor any(Axis axis, bool keepdim = false) const {
    return any(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor all(Axis axis, bool keepdim = false) const {
    return all(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor sum(Axis axis, bool keepdim = false) const {
    return sum(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor max(Axis axis, bool keepdim = false) const {
    return max(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor min(Axis axis, bool keepdim = false) const {
    return min(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor mean(Axis axis, bool keepdim = false) const {
    return mean(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor prod(Axis axis, bool keepdim = false) const {
    return prod(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor var(Axis axis, bool keepdim = false, int64_t correction = 1) const {
    return var(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim, correction);
  }
  template <typename Axis, typename = OneAxis<Axis>>
  Tensor std(Axis axis, bool keepdim = false, int64_t correction = 1) const {
    return std(std::vector<int64_t>{static_cast<int64_t>(axis)}, keepdim, correction);
  }
  // First index of the extreme value (int32); ties resolve to the lowest index.
  Tensor argmax(int64_t axis, bool keepdim = false) const;
  Tensor argmin(int64_t axis, bool keepdim = false) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;
  Tensor logsumexp(int64_t axis, bool keepdim = false) const;
  Tensor cumsum(int64_t axis) const;

  Tensor matmul(const Tensor& other) const;

  // ---- indexing ----
  // Indices are integer tensors of any integer dtype. Each output element reads the one element
  // its index points at (the work is proportional to the output, not to the indexed axis).
  // A negative index counts from the end (-1 is the last position), as in PyTorch and NumPy; an
  // index outside [-size, size) (for an unsigned dtype, [0, size)) is never read past: the value
  // that depends on it raises IndexError (a kiln::Error naming the operation, one such index and
  // the axis size) when it is computed, so before it can be read, and nothing is realized. Where
  // several indices are out of range, which one the message names may vary between runs (where
  // work items report theirs at the same moment, it may name none, only the axis). The check
  // waits for the device: a realize that gathers returns once its kernels are done.
  //
  // out[i][j] = x[index[i][j]][j] for axis 0 (PyTorch's gather): the index has x's number of
  // dimensions and is no larger than x outside `axis`; the result has its shape and x's dtype.
  Tensor gather(int64_t axis, const Tensor& index) const;
  // NumPy's take_along_axis: gather where the index and x broadcast against each other outside
  // `axis` (sizes equal, or 1).
  Tensor take_along_axis(const Tensor& index, int64_t axis) const;
  // The slices of x at the positions in `index` (1-D) along `axis`, in that order:
  // x.index_select(0, rows) picks rows.
  Tensor index_select(int64_t axis, const Tensor& index) const;
  // NumPy's take along an axis (MLX's take): the axis replaced by the index's axes, so x of shape
  // (a, n, b) and an index of shape (s, t) give (a, s, t, b); out[i, s, t, j] =
  // x[i, index[s, t], j].
  Tensor take(const Tensor& index, int64_t axis) const;

  // ---- stores to computed addresses ----
  // Each returns a new tensor: x with values written where an index points; x is unchanged.
  // Indices follow gather's rules (negative from the end; one outside the axis raises IndexError
  // and writes nothing). Results are the same on every run and every device: positions along
  // the axis are visited in ascending order (for an index of several dimensions, the others
  // fixed), so where indices repeat, a later one wins a write, and a reduction combines x's
  // value first (where it takes part), then the values in that order (a float sum rounds in that
  // order). The work is proportional to x plus the values written: one work item writes each
  // line of x along the axis, without atomics, so a scatter along an axis x has few lines
  // across (a 1-D x) runs on one work item.
  //
  // out[index[i][j]][j] = src[i][j] for axis 0 (PyTorch's scatter): the index has x's number of
  // dimensions and is no larger than x outside `axis`, nor than src anywhere (src is read at the
  // index's positions, converted to x's dtype).
  Tensor scatter(int64_t axis, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t axis, const Tensor& index, double value) const;
  // scatter_reduce with "sum": out[index[i][j]][j] += src[i][j].
  Tensor scatter_add(int64_t axis, const Tensor& index, const Tensor& src) const;
  // PyTorch's scatter_reduce: each element an index points at becomes the reduction of x's
  // value (with include_self; without, x's value takes no part) and the values pointed at it.
  // reduce: "sum", "prod", "mean", "amax" or "amin" (bool takes amax and amin). "mean" divides by
  // the values counted (plus one for x's own); integers round the quotient down. Elements no
  // index points at keep x's value.
  Tensor scatter_reduce(int64_t axis, const Tensor& index, const Tensor& src,
                        const std::string& reduce, bool include_self = true) const;
  // x with `values` written at the elements x.index(indices) selects (PyTorch's index_put, and
  // Python's x[indices] = values): the same entries as index (at most one Tensor), values
  // broadcast to the selection's shape and converted to x's dtype. With `accumulate` the values
  // are added to what is there, repeated indices adding up; without, a repeated index takes the
  // last value (in the index tensor's row-major order). Slices and integers alone are one
  // elementwise kernel; a Tensor entry scatters along its axis.
  Tensor index_put(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                   bool accumulate = false) const;

  // ---- in-place writes ----
  // Writes `value` (broadcast to x's shape, converted to x's dtype) into x's own memory, now (it
  // realizes), and returns x: an optimizer's state or a key/value cache changes without new
  // memory, x.native_memory() stays the same, and a captured step that reads x (a weight) reads
  // the new contents in its next replay. x must be realized and own its buffer (not a view of
  // another tensor's: a slice, a broadcast, a reshape); else a ValueError, and nothing changes.
  // Copies of x (Tensor y = x) are x: they see the write.
  //
  // Reads built before the write see the old value, reads built after see the new one. Where
  // something built before still holds x's old value (a lazy `y = x * 2` not yet realized, a view
  // of x, a part of the value the caller keeps, or a temporary of the expression that made the
  // value other than an operand of + - * /, which give theirs up: in `x.assign((x * 2).exp())`
  // the temporary `x * 2` is alive until the statement ends), the old contents are first copied
  // aside for it: the write still lands in x's memory, at the cost of one copy of x. Reads that
  // need the old value realized before the write avoid that copy.
  // A value that reads x only element by element at the element it writes (x * 0.9 + g) is
  // computed in place; one that reads it elsewhere (a flip, a sum) is computed beside it first.
  //
  // In a CapturedStep the write is recorded like any realize and replayed each call; a replay
  // writes x's memory without looking for reads built before it (as it overwrites any tensor
  // the step keeps), so realize those before the next call. A step may not write its own inputs
  // (a ValueError at the capture). Writes to one tensor from several threads at once, or while
  // another thread reads it, are a race.
  Tensor& assign(const Tensor& value);
  Tensor& assign(Tensor&& value);
  // x.assign(x.index_put(indices, values, accumulate)), PyTorch's x[indices] = values and
  // index_put_, writing only what the selection covers: with slices and integer positions the
  // values are stored through the selection's view of x (x[:, pos] = row: the work is the row;
  // each integer position is its own kernel, compiled once, and a Variable's position,
  // x.index_put_({Slice(), pos.bind(t)}, row), one kernel for all), with one Tensor entry and whole
  // slices on the other axes (cache.index_put_({Slice(), positions}, rows)) they are scattered into
  // x's memory directly; other selections compute x's new value whole. The positions of a Tensor
  // entry are checked first (one small kernel and a read), so an out-of-range one is an
  // IndexError with x unchanged (in a captured step's replays, that check is the Scatter's own,
  // after the in-range stores).
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                     bool accumulate = false);

  // ---- memory shared with the application ----
  // Wraps `data` (host memory holding the shape's elements of `dtype`, row-major) as a realized
  // tensor without a copy, on a device whose kernels use host memory in place: the CPU, an
  // OpenCL device that shares the host's memory (CL_DEVICE_HOST_UNIFIED_MEMORY: PoCL), a Vulkan
  // device that imports it (VK_EXT_external_memory_host: lavapipe, most GPU drivers; the pointer
  // aligned to minStorageBufferOffsetAlignment, 16 bytes on lavapipe); elsewhere a DeviceError
  // (from_vector copies). kiln's kernels then read and write `data` itself, and they run after
  // a realize returns on devices that queue their work (every one but the CPU): the application
  // reads or changes `data` only between realizes and after kiln::synchronize(device) (a change
  // is read by the next realize). `deleter`, where given, is called with `data` once kiln holds
  // the memory no more (every tensor, captured step and kernel reading it is done); until then
  // the memory must stay valid. A null `data`, or one not aligned to the dtype's size (or to
  // what the device needs), is an Error naming from_blob, and nothing is made.
  static Tensor from_blob(void* data, Shape shape, DType dtype,
                          std::function<void(void*)> deleter = {}, const std::string& device = "");
  // The device's own allocation behind this tensor (realized first, its device synchronized, so
  // its values are there): `handle` as the device API names it (a host pointer on the CPU, a
  // cl_mem on CL, a VkBuffer on VULKAN, a CUdeviceptr on CUDA), the tensor's first byte at
  // `offset` within it, `nbytes` long. It stays valid while this tensor, or another on the same
  // buffer, lives; other code may read it, or write it between realizes. A view that is not a
  // whole buffer (a slice, a transpose) has no allocation of its own: an Error says to take
  // contiguous() and keep that tensor.
  struct NativeMemory {
    void* handle = nullptr;
    size_t offset = 0;
    size_t nbytes = 0;
  };
  NativeMemory native_memory() const;
  // The other way: a realized tensor over an allocation the application made with the device
  // API, without a copy. `memory.handle` is as native_memory names it, made with the objects
  // kiln::native_device gives: a cl_mem of kiln's cl_context, a VkBuffer of kiln's VkDevice with
  // storage and transfer-source and -destination usage, a CUdeviceptr in the device's primary
  // context (cudaMalloc's), on the CPU a host pointer (as from_blob). The shape's elements of
  // `dtype`, row-major, start at `memory.offset`, aligned to the dtype's size and to what the
  // device binds (CL_DEVICE_MEM_BASE_ADDR_ALIGN on CL, minStorageBufferOffsetAlignment on
  // VULKAN, 256 bytes on CUDA, where kernels load whole vectors); `memory.nbytes`, where not 0,
  // is what the allocation holds from there, and a shape needing more is an Error. kiln's
  // kernels read and write the allocation in place, so the application uses it only after
  // kiln::synchronize(device). `release`, where given, is called once kiln holds the allocation
  // no more (every tensor, captured step and kernel using it done); until then it must stay
  // valid, and the application frees it. A null handle, a misaligned offset, a cl_mem of
  // another context, or a device that cannot take an allocation, is an Error naming
  // from_native, and nothing is made; other devices cannot tell an allocation of another
  // context or one too small, which the application must not give.
  static Tensor from_native(NativeMemory memory, Shape shape, DType dtype,
                            std::function<void()> release = {}, const std::string& device = "");

  // ---- evaluation and data ----
  // Computes the value now (no-op when it is already computed). Returns *this. To compute
  // several tensors that share work, realize them together (kiln::realize below).
  const Tensor& realize() const;
  // Realizes and copies every element to the host, row-major, converting to T.
  template <typename T>
  std::vector<T> to_vector() const;
  // The value of a one-element tensor.
  template <typename T>
  T item() const;
  // The same values on another device (a copy when the device differs).
  Tensor to(const std::string& device) const;

  // ---- gradients (reverse mode; kiln/autograd.h has kiln::grad and NoGradGuard) ----
  // Ops on tensors that require a gradient record how to take it back, as a graph of their own
  // beside the value's; backward() walks it and builds each gradient as a lazy tensor, fused and
  // realized like any other.
  //
  //   Tensor w = Tensor::rand({4, 3}, /*seed=*/0).requires_grad_();
  //   Tensor loss = (x.matmul(w) - y).square().mean();
  //   loss.backward();                // w.grad() is d loss / d w, shape (4, 3)
  //
  // Marks a float tensor as a leaf whose gradient backward() accumulates (or unmarks it);
  // returns *this. A DTypeError for integer and bool tensors (no gradient), a ValueError for a
  // tensor a recorded op made (take `detach()` first).
  const Tensor& requires_grad_(bool on = true) const;
  // Marked itself, or computed by a recorded op from a tensor that requires a gradient.
  bool requires_grad() const;
  // Not made by a recorded op: every tensor that does not require a gradient, and the marked ones.
  bool is_leaf() const;
  // What backward() accumulated into this leaf: an empty tensor before the first backward.
  Tensor grad() const;
  // Replaces the accumulated gradient; an empty tensor clears it (what zero_grad does). A
  // ShapeError unless it has this tensor's shape.
  void set_grad(const Tensor& gradient) const;
  // Adds d(this)/d(leaf) to leaf.grad() for every leaf this tensor was computed from that
  // requires a gradient. A one-element tensor may leave `gradient` empty (it is then 1); any
  // other needs a `gradient` of its shape, the weights of its elements. The recorded graph is
  // freed as it is walked unless `retain_graph`: a second backward through it is a ValueError.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // The same value, cut from the recorded graph: a leaf that does not require a gradient.
  Tensor detach() const;

  // The expression graph behind this tensor, as text (one node per line) and as Graphviz dot.
  std::string graph() const;
  std::string graph_dot() const;

  // Internal: the graph node. Stable across copies of the handle until realized.
  std::shared_ptr<const UOp> node() const;
  explicit Tensor(std::shared_ptr<TensorState> state) : state_(std::move(state)) {}
  // Internal: the state the handle's copies share (null when empty).
  const std::shared_ptr<TensorState>& shared_state() const { return state_; }

 private:
  static Tensor from_bytes(const void* data, size_t nbytes, DType dtype, Shape shape,
                           const std::string& device);
  void copy_to_host(void* out, DType dtype) const;
  // The state behind the handle; throws an Error naming `use` when the tensor is empty.
  TensorState& state(const char* use) const;
  // assign; `op` names it in errors. Where `scatter_checked`, the value's own Scatter into x
  // (index_put_'s) had its positions checked already. With a `region` (a View of x's buffer
  // node), the value is written there only.
  Tensor& write_in_place(Tensor&& value, const char* op, bool scatter_checked,
                         std::shared_ptr<const UOp> region = nullptr);
  std::shared_ptr<TensorState> state_;

  friend void realize(const std::vector<Tensor>& tensors);
};

// Computes several tensors in one realize: their graphs are scheduled as one, so work they share
// runs once (a model's logits and their argmax, a loss and the values it was computed from),
// where realizing them one after another would compute it for each. Tensors computed already
// are left as they are, a tensor listed twice is computed once, and an empty list does nothing.
// Tensors on different devices are realized per device, in the order the list first names each
// device. An empty (default-constructed) tensor in the list is refused before anything runs.
void realize(const std::vector<Tensor>& tensors);

// ---- elementwise with broadcasting ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator%(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
// The same for temporaries: an operand that is a temporary gives up its graph as soon as the
// result holds it, where it would otherwise hold it until the statement ends. So the
// intermediate results of `w.assign(w * 0.9 + g)` no longer read w's old value, and the write
// needs no copy of w (see Tensor::assign). A named tensor passed with std::move is left empty.
Tensor operator+(Tensor&& a, const Tensor& b);
Tensor operator+(const Tensor& a, Tensor&& b);
Tensor operator+(Tensor&& a, Tensor&& b);
Tensor operator+(Tensor&& a, double b);
Tensor operator+(double a, Tensor&& b);
Tensor operator-(Tensor&& a, const Tensor& b);
Tensor operator-(const Tensor& a, Tensor&& b);
Tensor operator-(Tensor&& a, Tensor&& b);
Tensor operator-(Tensor&& a, double b);
Tensor operator-(double a, Tensor&& b);
Tensor operator*(Tensor&& a, const Tensor& b);
Tensor operator*(const Tensor& a, Tensor&& b);
Tensor operator*(Tensor&& a, Tensor&& b);
Tensor operator*(Tensor&& a, double b);
Tensor operator*(double a, Tensor&& b);
Tensor operator/(Tensor&& a, const Tensor& b);
Tensor operator/(const Tensor& a, Tensor&& b);
Tensor operator/(Tensor&& a, Tensor&& b);
Tensor operator/(Tensor&& a, double b);
Tensor operator/(double a, Tensor&& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
// Bitwise on integers, logical on bool.
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);

Tensor maximum(const Tensor& a, const Tensor& b);  // NaN wins, as in PyTorch
Tensor minimum(const Tensor& a, const Tensor& b);
// The rows of `weight` (a [rows, features] table) at `indices` (integer, any shape): the result
// has shape indices.shape() + [features] (a language model's token embedding). Indices follow
// the rules of Tensor::gather (negative from the end, IndexError outside the table).
Tensor embedding(const Tensor& indices, const Tensor& weight);

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, double a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, double b);
Tensor pow(const Tensor& base, const Tensor& exponent);
// The C library's atan2(y, x) (the angle of the point (x, y), in [-pi, pi], with its signed-zero
// and infinity cases), hypot (sqrt(a^2 + b^2) without overflow; inf if either is inf, even with a
// NaN) and copysign (|a| with b's sign bit, -0.0 and NaN's included). Integer and bool operands
// compute in float32; operands broadcast and promote as in arithmetic.
Tensor atan2(const Tensor& y, const Tensor& x);
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Tensor& b);
// a + weight * (b - a), in the promoted float dtype (integers compute in float32), as PyTorch's
// lerp: exact at weight 0; at weight 1, b itself.
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& weight);
Tensor lerp(const Tensor& a, const Tensor& b, double weight);
// Python's floor division and remainder (as NumPy's; PyTorch's floor_divide and remainder but
// for the sign of a zero remainder): the quotient rounded toward -inf, and the remainder with the
// divisor's sign (a == floor_divide(a, b) * b + remainder(a, b)); `%` stays C's fmod, the
// dividend's sign. Floats: x // 0 is x / 0 (+-inf or NaN) and remainder(x, 0) NaN; a zero
// remainder takes the divisor's sign (PyTorch keeps fmod's). Integers: both are 0
// for a divisor of 0, as integer `/` and `%`, and INT_MIN // -1 wraps to INT_MIN. bool computes in
// int32.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
// Bitwise not of an integer tensor (logical not of a bool one).
Tensor operator~(const Tensor& a);
// Shifts of an integer tensor by `bits` (an integer tensor, or a whole number), in a's dtype. A
// shift by the dtype's width or more, or by a negative amount, shifts every bit out: << and an
// unsigned or non-negative >> give 0, a negative signed >> gives -1 (C leaves these undefined).
// >> of a signed value is arithmetic (keeps the sign); bits shifted past the top are dropped.
Tensor operator<<(const Tensor& a, const Tensor& bits);
Tensor operator>>(const Tensor& a, const Tensor& bits);
Tensor operator<<(const Tensor& a, int64_t bits);
Tensor operator>>(const Tensor& a, int64_t bits);
// |a - b| <= atol + rtol * |b| elementwise, as bool (NumPy's and PyTorch's isclose): equal
// infinities are close, NaN is close to NaN only with equal_nan. Computed in the promoted float
// dtype (float32 for integers, bool and the 16-bit floats), and equal integers are close however
// large; rtol and atol >= 0 (else a ValueError).
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false);
// Whether every element is close (realizes the result).
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor cat(const std::vector<Tensor>& tensors, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis = 0);

// The NumPy broadcast of two shapes; throws ShapeError naming `op` when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast_shapes");

// What Tensor::index takes, as PyTorch's C++ torch::indexing does:
//   using namespace kiln::indexing;
//   x.index({Slice(), 0})                      // x[:, 0]
//   x.index({Slice(1, None, 2), Ellipsis, -1})  // x[1::2, ..., -1]
//   x.index({Slice(None, None, -1)})            // x[::-1]
//   table.index({ids})                          // table[ids], ids an integer Tensor
//   cache.index({Slice(), pos.bind(t)})          // cache[:, t], one kernel for every t
namespace indexing {

// Python's start:stop:step (see Tensor::slice); Slice() is the whole axis (":").
struct Slice {
  Slice() = default;
  Slice(std::optional<int64_t> start_in, std::optional<int64_t> stop_in = std::nullopt,
        int64_t step_in = 1)
      : start(start_in), stop(stop_in), step(step_in) {}
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};

inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

class TensorIndex {
 public:
  template <
      typename Integer,
      std::enable_if_t<std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>, int> = 0>
  TensorIndex(Integer position) : value_(static_cast<int64_t>(position)) {}  // NOLINT
  // A position given by a bound Variable (see Tensor::select(int64_t, const Dim&)); a Dim that
  // is a number is that integer.
  TensorIndex(const Dim& position)  // NOLINT
      : value_(position.is_symbolic() ? Value(position) : Value(position.value())) {}
  TensorIndex(Slice range) : value_(range) {}                      // NOLINT
  TensorIndex(Tensor positions) : value_(std::move(positions)) {}  // NOLINT
  TensorIndex(EllipsisIndex) : value_(EllipsisIndex{}) {}          // NOLINT

  bool is_integer() const { return std::holds_alternative<int64_t>(value_); }
  bool is_slice() const { return std::holds_alternative<Slice>(value_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(value_); }
  bool is_ellipsis() const { return std::holds_alternative<EllipsisIndex>(value_); }
  bool is_variable() const { return std::holds_alternative<Dim>(value_); }
  int64_t integer() const { return std::get<int64_t>(value_); }
  const Dim& variable() const { return std::get<Dim>(value_); }
  const Slice& slice() const { return std::get<Slice>(value_); }
  const Tensor& tensor() const { return std::get<Tensor>(value_); }

 private:
  using Value = std::variant<int64_t, Dim, Slice, Tensor, EllipsisIndex>;
  Value value_;
};

}  // namespace indexing

// Explicit instantiations live in the library for every host type that matches a dtype.
#define KILN_TENSOR_HOST_TYPES(X) \
  X(bool)                         \
  X(int8_t)                       \
  X(int16_t)                      \
  X(int32_t)                      \
  X(int64_t) X(uint8_t) X(uint16_t) X(uint32_t) X(uint64_t) X(half) X(bfloat16) X(float) X(double)

#define KILN_DECLARE_EXTERN(T)                                                                     \
  extern template Tensor Tensor::from_vector<T>(const std::vector<T>&, Shape, const std::string&); \
  extern template std::vector<T> Tensor::to_vector<T>() const;                                     \
  extern template T Tensor::item<T>() const;
KILN_TENSOR_HOST_TYPES(KILN_DECLARE_EXTERN)
#undef KILN_DECLARE_EXTERN

}  // namespace kiln
