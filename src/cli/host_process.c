/* stub */ typedef int stub_host_process_t;
