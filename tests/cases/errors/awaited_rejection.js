await Promise.reject(new TypeError("rejected"));
