/* stub */ typedef int stub_console_t;
