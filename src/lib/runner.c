/* stub */ typedef int stub_runner_t;
