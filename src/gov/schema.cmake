# al_schema: the JSON Schema subset of template inputs (src/gov/schema.h). Pure rules, no I/O.
add_library(al_schema STATIC ${CMAKE_CURRENT_LIST_DIR}/schema.c)
target_include_directories(al_schema PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(al_schema PUBLIC al_common m PRIVATE airlock_flags)
