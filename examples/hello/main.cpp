// hello: a first kiln program. Build it against an installed kiln (see CMakeLists.txt).
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() try {
  std::printf("devices:");
  for (const std::string& name : kiln::devices()) std::printf(" %s", name.c_str());
  std::printf("\ndefault device: %s\n", kiln::default_device().c_str());

  // Build an expression. Nothing runs yet: these lines only record a graph.
  kiln::Tensor a = kiln::Tensor::rand({4, 8}, /*seed=*/1);
  kiln::Tensor b = (a * 2 + 1).relu().sum({1});  // shape {4}

  // Asking for the values fuses the graph into kernels, compiles them and runs them.
  std::vector<float> row_sums = b.to_vector<float>();
  std::printf("sum over each row of relu(2a + 1):");
  for (float v : row_sums) std::printf(" %.4f", v);
  std::printf("\n");

  // A matrix product, checked against the same product worked out by hand.
  //   [1 2 3]   [ 7  8]   [ 58  64]
  //   [4 5 6] x [ 9 10] = [139 154]
  //             [11 12]
  kiln::Tensor x = kiln::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  kiln::Tensor y = kiln::Tensor::from_vector<float>({7, 8, 9, 10, 11, 12}, {3, 2});
  std::vector<float> got = x.matmul(y).to_vector<float>();
  const std::vector<float> want = {58, 64, 139, 154};

  if (got.size() != want.size()) {
    std::fprintf(stderr, "matmul: got %zu values, want %zu\n", got.size(), want.size());
    return 1;
  }
  std::printf("x @ y = [%g %g; %g %g]\n", got[0], got[1], got[2], got[3]);
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > 1e-4f) {
      std::fprintf(stderr, "matmul mismatch at %zu: got %g, want %g\n", i, got[i], want[i]);
      return 1;
    }
  }
  std::printf("ok\n");
  return 0;
} catch (const kiln::Error& e) {
  std::fprintf(stderr, "kiln error: %s\n", e.what());
  return 1;
}
