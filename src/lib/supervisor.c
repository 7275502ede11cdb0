/* stub */ typedef int stub_supervisor_t;
