/* stub */ typedef int stub_bridge_t;
