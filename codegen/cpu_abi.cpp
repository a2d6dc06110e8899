#include "codegen/cpu_abi.h"

#include "codegen/dialect.h"
#include "codegen/linear.h"

namespace kiln {

std::string cpu_kernel_signature(const LinearProgram& program, const Dialect& dialect) {
  const std::string restrict_word = "restrict";
  std::string text = "void " + program.name + "(void** " + restrict_word +
                     " buffers, const long long* " + restrict_word +
                     " variables, long long begin, long long end) {\n";
  for (size_t param = 0; param < program.params.size(); ++param) {
    const KernelParam& info = program.params[param];
    const std::string type = dialect.type_name(info.dtype);
    const std::string qualifier = info.is_output ? "" : "const ";
    text += "  " + qualifier + type + "* " + restrict_word + " " + param_name(param) + " = (" +
            qualifier + type + "*)buffers[" + std::to_string(param) + "];\n";
  }
  for (size_t at = 0; at < program.variables.size(); ++at) {
    text += "  const long long " + program.variables[at].var_name() + " = variables[" +
            std::to_string(at) + "];\n";
  }
  return text + "  (void)variables;\n";
}

}  // namespace kiln
