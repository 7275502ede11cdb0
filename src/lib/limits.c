/* stub */ typedef int stub_limits_t;
