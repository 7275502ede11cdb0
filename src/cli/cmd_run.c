/* stub */ typedef int stub_cmd_run_t;
