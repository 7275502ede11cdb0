/* stub */ typedef int stub_host_exec_t;
