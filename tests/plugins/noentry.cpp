// A valid shared object that is not a kiln plugin: it exports no kiln_plugin_entry. The plugin
// test copies it into a plugin folder as libkiln_device_noentry.so; the registry must skip it
// and say why.

extern "C" __attribute__((visibility("default"))) int kiln_test_not_a_plugin() {
  return 42;
}
