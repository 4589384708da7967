# ctest's run of kvrt_truncation_race: a 15M-shaped q8_0 GGUF (a few MB, loads in
# a fraction of a second), truncated during 20 loads.
file(MAKE_DIRECTORY ${WORK_DIR})
set(model ${WORK_DIR}/race-q8_0.gguf)
execute_process(COMMAND ${KVRT} synth --dim 288 --layers 6 --heads 6 --ffn 768 --vocab 4096 --seq-len 256
                        --gguf ${model} --type q8_0
                RESULT_VARIABLE synth_status)
if(NOT synth_status EQUAL 0)
  message(FATAL_ERROR "kvrt synth failed: ${synth_status}")
endif()
execute_process(COMMAND ${RACE} ${model} 20 ${WORK_DIR} RESULT_VARIABLE race_status)
file(REMOVE ${model})
if(NOT race_status EQUAL 0)
  message(FATAL_ERROR "a host died while its model file was truncated (status ${race_status})")
endif()
