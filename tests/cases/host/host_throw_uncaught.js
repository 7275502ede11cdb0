await h.f();
