// Opens the default device (KILN_DEVICE) in a fresh process, computes one value on it and says
// what happened, so the plugin test can check the registry from outside (it loads plugins once
// per process). Exit status: 0 computed, 3 DeviceError, 4 any other error.

#include <kiln/kiln.h>

#include <cstdio>
#include <exception>
#include <string>

int main() {
  try {
    const std::string name = kiln::default_device();
    const float total = (kiln::Tensor::from_vector<float>({1, 2, 3}, {3}) * 2).sum().item<float>();
    std::printf("computed on %s: %g\n", name.c_str(), total);
    return 0;
  } catch (const kiln::DeviceError& error) {
    std::printf("DeviceError: %s\n", error.what());
    return 3;
  } catch (const std::exception& error) {
    std::printf("other error: %s\n", error.what());
    return 4;
  }
}
