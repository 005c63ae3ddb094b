"""A plain TRL script with agentgrpo's callbacks: metrics.jsonl the doctor reads, live checks during training."""

from __future__ import annotations

import json


def test_recorder_and_live_doctor_in_a_plain_grpotrainer_script(tiny_sft_dir, tmp_path, capsys):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from agentgrpo import LiveDoctor, Recorder
    from agentgrpo.cli import main
    from agentgrpo.tasks.calculator import CalculatorEnv, correct_answer, train_problems, well_formed
    from agentgrpo.training.models import load_tokenizer

    run_dir = tmp_path / "mine"
    trainer = GRPOTrainer(  # exactly what a TRL user writes, plus two callbacks
        model=str(tiny_sft_dir),
        reward_funcs=[correct_answer, well_formed],
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            max_steps=2,
            per_device_train_batch_size=8,
            num_generations=8,
            max_completion_length=24,
            logging_steps=1,
            save_strategy="no",
            use_cpu=True,
            report_to="none",
            disable_tqdm=True,
            reward_weights=[1.0, 0.0],  # well_formed: a shadow reward, watched, not trained on
        ),
        train_dataset=Dataset.from_list(train_problems(16, seed=1)),
        processing_class=load_tokenizer(str(tiny_sft_dir)),
        environment_factory=CalculatorEnv,
        callbacks=[Recorder(run_dir), LiveDoctor(every=1, min_steps=1, run_dir=run_dir, print_fn=None)],
    )
    recorder = next(c for c in trainer.callback_handler.callbacks if isinstance(c, Recorder))
    recorder.attach(trainer)  # optional: lets it sample completions and name the rewards
    trainer.train()
    import yaml

    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["rewards"] == [{"name": "correct_answer", "weight": 1.0}, {"name": "well_formed", "weight": 0.0}]
    assert (run_dir / "completions.jsonl").exists()
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and "rewards/correct_answer/mean" in records[0]
    live = [json.loads(line) for line in (run_dir / "doctor_live.jsonl").read_text().splitlines()]
    assert live[-1]["event"] == "final" and live[-1]["steps_seen"] == 2
    capsys.readouterr()  # training's own output
    code = main(["doctor", str(run_dir), "--json", "--no-report"])
    report = json.loads(capsys.readouterr().out)
    # the doctor read the script's log; 2 steps are too few to judge, which it says (exit 2)
    assert report["steps"] == 2 and (code, report["verdict"]) == (2, "too_short")
