/* stub */ typedef int stub_host_t;
