/* stub */ typedef int stub_run_t;
