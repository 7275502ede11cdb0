/* stub */ typedef int stub_engine_t;
