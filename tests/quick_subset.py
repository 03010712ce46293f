"""The quick subset (`pytest -m quick`): each test file's main path, in under 2 minutes on a
2-core machine (the whole suite takes about 13.5). A whole file where all of it is cheap (None), else
the tests named; tests/test_quick_subset.py checks that every test file is here (or marks its quick
tests itself with @pytest.mark.quick, which `-m quick` honours as well) and every name exists."""

QUICK = {
    # its control (the solutions in full) is test_suites.py's quick one on the session's engine
    "test_adversarial.py": {"test_exit_at_import", "test_output_flood_is_capped"},
    "test_adversarial_reports.py": {"test_markup_injection_opens_no_section"},
    "test_batch.py": {"test_clean_run_grades_everyone"},
    "test_batch_container.py": {"test_container_mode_from_the_environment_is_refused_by_run_batch",
                                "test_without_container_mode_nothing_is_refused"},
    "test_batch_hostile.py": {"test_student_names_from_any_file_names"},
    "test_bench_mha.py": {"test_the_table_gives_ratios_to_sdpa"},
    "test_book_check.py": {"test_the_reference_matches_every_printed_value"},
    "test_cannot_isolate.py": None,
    "test_chapter_parameter.py": {"test_an_engine_given_another_chapter_discovers_its_parts_and_grades_them",
                                  "test_the_command_line_resolves_the_chapter_once"},  # importing every module: the whole suite
    "test_check_notes.py": {"test_the_solutions_get_no_note"},
    "test_child_reuse.py": {"test_one_child_per_submission"},
    "test_ci_command.py": {"test_event_context_takes_only_a_number_and_a_sha",
                           "test_comment_quiets_mentions_and_stays_under_githubs_limit"},
    "test_class_report.py": {"test_unfinished_work_is_one_row_per_part_below_the_misconceptions",
                             "test_only_misconceptions_are_misconceptions_and_each_student_counts_once"},
    "test_container_mode.py": {"test_without_the_flag_the_grader_refuses_and_names_the_refusal"},
    "test_cuda_fork.py": {"test_a_machine_where_nvml_and_torch_see_no_gpu_refuses_cuda"},
    "test_degenerate.py": {"test_the_degenerate_helper"},
    "test_doc_figures.py": None,
    # and test_every_failed_check_names_the_one_cause's first case, marked quick in the file
    "test_diagnosis.py": {"test_two_mistakes_with_the_same_numbers_are_both_named",
                          "test_the_cause_named_by_most_failed_checks_is_the_part_s_diagnosis"},
    "test_deploy_installs.py": set(),  # fresh virtual environments of the deployed paths: `-m deploy`
    "test_device.py": {"test_on_the_cpu_nothing_is_copied"},
    "test_fake_cuda.py": {"test_the_emulated_gpu_follows_torchs_device_rules",
                          "test_the_reference_runs_on_the_emulated_gpu_in_every_part"},
    "test_efficiency.py": {"test_the_reference_mha_issues_the_same_matmuls_for_any_head_count",
                           "test_counts_from_the_child_are_checked"},
    "test_learner_code.py": {"test_the_reading_follows_the_name_to_the_class_python_binds",
                             "test_tampering_is_read_from_code_never_from_comments_or_strings"},
    "test_false_alarms.py": {"test_the_mha_mask_buffer_may_have_any_name",
                             "test_a_wrapper_under_another_name_is_charged_in_mha_only"},
    "test_vague_diagnoses.py": {"test_what_counts_as_a_module_variable_read",
                                "test_nbgrader_feedback_names_the_solution_cell_not_a_file"},
    "test_one_parse.py": {"test_a_text_is_parsed_once_per_submission_and_never_shared_with_the_next"},
    "test_fairness.py": {"test_a_raising_v2_costs_the_transfer_nothing"},
    "test_fair_cpu.py": {"test_time_spent_off_the_cpu_is_not_the_part_s", "test_a_loop_is_ended_at_its_cpu_time_limit"},
    "test_envcheck.py": {"test_the_cache_keeps_a_full_score_and_a_hit_grades_nothing"},
    "test_gpu_check.py": {"test_the_summary_line_when_everything_holds"},
    "test_gpu_memory.py": {"test_the_allocator_cap_is_the_parts_memory_as_a_share_of_the_card"},
    "test_gpu_room.py": {"test_the_device_nodes_are_the_ones_cuda_opens"},
    "test_gradebook_history.py": None,
    "test_grader_versions.py": {"test_the_graded_notebooks_state_the_limit"},
    "test_graded_under_load.py": set(),  # a dozen busy processes per core for a minute and a half: `-m load`
    "test_gradescope.py": {"test_the_zip_follows_gradescopes_layout", "test_solutions_get_full_marks"},
    "test_import_graph.py": None,
    "test_hidden_messages.py": None,
    "test_nbgrader_exchange.py": {"test_the_course_config_uses_these_classes",
                                  "test_a_file_in_one_students_zip_named_like_anothers_is_not_theirs"},
    "test_nbgrader_formgrader.py": None,
    "test_nothing_left.py": None,
    "test_stand_ins.py": {"test_the_stand_ins_draw_compute_and_differentiate_as_the_solutions_do",
                          "test_student_code_finds_nothing_of_the_grader_s_code_behind_a_stand_in"},
    "test_syscall_filter.py": {"test_every_shared_state_call_is_refused_with_eperm",
                               "test_the_allow_list_names_none_of_the_shared_state_calls"},
    "test_independence.py": {"test_a_v2_that_raises_when_built_costs_the_transfer_nothing",
                             "test_the_probes_find_the_reference_right_on_its_own",
                             "test_heads_built_through_an_alias_are_recognised", "test_a_part_never_receives_its_own_reference"},
    "test_lateness.py": None,
    "test_lms_export.py": None,
    "test_regrades.py": set(),  # every test reads a class graded twice (about 30 s): the whole suite runs it
    "test_isolation.py": {"test_the_room_shows_only_the_allow_list", "test_unseen_inputs_come_from_the_runs_secret"},
    "test_lint.py": {"test_ruff_finds_nothing", "test_every_public_function_of_the_core_is_annotated",
                     "test_the_annotation_check_sees_a_missing_annotation"},  # mypy: the whole suite
    "test_machine_deaths.py": {"test_a_child_killed_from_outside_is_graded_again_in_a_fresh_one",
                               "test_an_oom_kill_is_read_from_the_group",
                               "test_a_part_that_kills_itself_is_charged_not_left_ungraded",
                               "test_waiting_for_a_cpu_or_for_the_grader_is_not_sleeping"},
    "test_nbgrader_commands.py": set(),  # real nbgrader: `-m nbgrader`
    "test_nbgrader_roundtrip.py": set(),
    "test_nbgrader_validate.py": set(),
    "test_notebook_grading.py": {"test_modules_win_over_notebooks", "test_a_module_in_two_notebooks_is_an_error_naming_both"},
    "test_notebook_outputs.py": set(),  # a Jupyter kernel per notebook: `-m notebooks`
    "test_notebooks.py": None,
    # test_one_item_per_cause_in_every_channel: two of its kinds are marked quick in the file
    "test_one_cause.py": {"test_a_withheld_check_is_never_folded"},
    "test_one_mistake.py": {"test_a_module_that_does_not_import_is_one_item_in_every_format",
                            "test_a_voided_check_is_folded_into_the_mistake_that_voids_it"},
    "test_protocol.py": None,
    "test_public_diagnoses.py": {"test_one_mistake_in_causal_fails_only_causal_s_tests_without_tensor_dumps"},
    "test_quick_subset.py": None,
    "test_readme_batch.py": set(),  # a batch of six for the README's example summary: the whole suite runs it
    "test_real_cause.py": {"test_a_tuple_assert_is_explained", "test_a_plain_assert_is_not_a_tuple"},
    "test_release.py": {"test_the_release_has_what_students_need"},
    "test_reports.py": {"test_a_visible_failure_shows_its_diagnosis_and_the_students_own_error",
                        "test_a_hidden_failure_shows_its_diagnosis_unnamed_and_never_the_students_text",
                        "test_markdown_renders_no_markup_from_student_text",
                        "test_markdown_escapes_only_what_would_render", "test_raw_html_never_reaches_markdown_or_the_comment",
                        "test_feedback_groups_checks_by_diagnosis", "test_a_graded_cell_reports_like_every_other_channel"},
    "test_room.py": None,
    "test_rubric.py": {"test_a_malformed_rubric_names_the_file_and_the_line", "test_the_rubric_matches_the_suites"},
    "test_rubric_change.py": {"test_release_refuses_notebooks_made_for_another_rubric"},
    "test_rubric_limits.py": None,
    "test_setup_script.py": None,
    "test_shared_server.py": {"test_a_batch_starts_one_fork_server_for_all_its_workers"},
    "test_staging.py": None,
    "test_structured_records.py": {"test_the_batch_reads_not_graded_from_the_record_not_the_problem",
                                   "test_the_batch_retries_on_the_flag_alone"},
    "test_student_names.py": {"test_ambiguous_names_are_a_problem_for_both", "test_long_names_are_bounded_and_stay_distinct"},
    "test_structure.py": None,
    "test_stubs.py": {"test_committed_stubs_are_what_the_generator_makes_now", "test_stubs_keep_every_signature_and_docstring",
                      "test_every_public_test_passes_on_the_solutions"},
    "test_submission_limits.py": {"test_a_refused_submission_keeps_the_last_graded_score_and_says_why",
                                  "test_runs_the_grader_did_not_finish_do_not_count"},
    "test_suites.py": {"test_solutions_get_exactly_full_marks", "test_stubs_get_zero_and_every_failure_says_not_implemented",
                       "test_one_submission_grades_in_seconds"},
    "test_text.py": None,
    "test_visual_feedback.py": {"test_a_wrong_softmax_dim_carries_the_students_and_the_expected_weights",
                                "test_every_check_named_for_pictures_exists_in_its_suite"},
    "test_workflows.py": {"test_every_action_is_pinned_by_full_hash_with_a_version_comment",
                          "test_permissions_are_empty_by_default_and_minimal_per_job"},
    "test_zip_in_folder.py": {"test_grade_dir_holding_one_zip"},
}


def chosen(file_name, test_name):
    tests = QUICK.get(file_name, set())
    return tests is None or test_name in tests


def marks_itself(source):
    """Whether a test file's source marks tests quick itself (`@pytest.mark.quick` on a test or a
    class, or in its `pytestmark`): such a file need not be listed in QUICK (pytest selects those
    tests for `-m quick` on its own)."""
    import ast

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "quick" and ast.unparse(node.value) == "pytest.mark":
            return True
    return False
