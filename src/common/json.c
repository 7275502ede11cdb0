/* stub */ typedef int stub_json_t;
