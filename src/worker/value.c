/* stub */ typedef int stub_value_t;
