from taguru_ray.contract.items import Alias, Association
from taguru_ray.pipeline.claims import ClaimLedger, judge, rewires
from taguru_ray.pipeline.mechanical import Removal
from taguru_ray.pipeline.merge import MergeInput, MergeRules, merge
from taguru_ray.pipeline.plan import Block, Piece
from taguru_ray.pipeline.reconcile import PieceState, proposal_of, prune_claimed
from taguru_ray.pipeline.steer import Contribution
from taguru_ray.pipeline.validate import PieceOutput

PIECE = Piece(0, 1, (Block(0, "[0] x"),))
RULES = MergeRules(paragraph_count=1, questions_cap=0, passage=True)


def earlier() -> ClaimLedger:
    ledger = ClaimLedger()
    ledger.absorb(
        0,
        Contribution.of(
            [Association("東雲電機株式会社(架空)", "製品", "SN-SEN70")],
            [Alias("東雲電機", "東雲電機株式会社(架空)", "concept")],
        ),
    )
    return ledger


def piece_with(*aliases: tuple[str, str, str]) -> PieceState:
    output = PieceOutput(
        associations=[
            {
                "subject": "東雲電機株式会社",
                "label": "製品",
                "object": "SN-SEN70",
                "weight": 1.0,
                "paragraph": None,
            }
        ],
        aliases=[{"alias": a, "canonical": c, "kind": k} for a, c, k in aliases],
        questions=[],
    )
    return PieceState(PIECE, output, None, "", "")


def test_an_alias_that_would_rewire_an_earlier_claim_is_pruned() -> None:
    piece = piece_with(
        ("東雲電機株式会社(架空)", "東雲電機株式会社", "concept"),
        ("東雲電機", "東雲電機株式会社", "concept"),
        ("SN-SEN70センサー", "SN-SEN70", "concept"),
    )
    ledger = earlier()
    proposal = proposal_of([piece], RULES)
    verdict = judge(proposal, ledger.lookups(proposal.queries(), upto=1))
    assert verdict.pruned == ((0, 0), (0, 1))
    prune_claimed([piece], verdict.pruned)
    assert [r.path for r in piece.removed] == ["aliases[0]", "aliases[1]"]
    assert piece.removed[1].reason == (
        'alias "東雲電機" already names a concept an earlier segment or the target context '
        "settled on; an alias cannot rewire it (import would refuse the source file)"
    )
    assert [a["alias"] for a in piece.output.aliases] == ["SN-SEN70センサー"]


def test_the_same_mapping_again_and_an_alias_of_an_alias_survive() -> None:
    ledger = earlier()
    claimed = ledger.lookups([("concept", "東雲電機"), ("concept", "東雲電機株式会社(架空)")], 1)
    assert not rewires("東雲電機", "東雲電機株式会社(架空)", "concept", claimed)
    # 東雲電機 routes to the true record, so aliasing to it lands on the same one.
    claimed = ledger.lookups([("concept", "東雲"), ("concept", "東雲電機")], 1)
    assert not rewires("東雲", "東雲電機", "concept", claimed)


def test_namespaces_are_separate() -> None:
    ledger = earlier()
    claimed = ledger.lookups([("label", "東雲電機"), ("label", "製品")], 1)
    assert not rewires("東雲電機", "製品", "label", claimed)
    assert rewires("製品", "作る", "label", ledger.lookups([("label", "製品")], 1))


def test_a_segment_sees_only_the_claims_of_its_window() -> None:
    ledger = earlier()
    ledger.absorb(1, Contribution.of([Association("X", "uses", "Y")], []))
    assert ledger.resolve("concept", "X", upto=1) is None
    assert ledger.resolve("concept", "X", upto=2) == "X"
    assert ledger.resolve("concept", "東雲電機", upto=0) is None


def test_the_first_claim_wins() -> None:
    ledger = ClaimLedger()
    ledger.absorb(0, Contribution.of([Association("a", "uses", "b")], [Alias("A", "a", "concept")]))
    ledger.absorb(1, Contribution.of([Association("c", "uses", "d")], [Alias("A", "c", "concept")]))
    assert ledger.resolve("concept", "A", upto=2) == "a"


def test_removal_kind_follows_the_path() -> None:
    assert Removal("associations[1]", "x").kind == "association"


def test_the_verdict_hands_on_exactly_what_the_source_file_holds() -> None:
    piece = piece_with(
        ("東雲電機", "東雲電機株式会社", "concept"),  # rewires: pruned
        ("SN-SEN70センサー", "SN-SEN70", "concept"),  # adopted
        ("SN-SEN70センサー", "SN-SEN70", "concept"),  # a duplicate: folded
        ("ghost", "nothing here", "concept"),  # dangling: merge drops it
    )
    proposal = proposal_of([piece], RULES)
    verdict = judge(proposal, earlier().lookups(proposal.queries(), upto=1))
    prune_claimed([piece], verdict.pruned)
    merged = merge([MergeInput(piece.piece_id, piece.output)], RULES)
    assert verdict.contribution == Contribution.of(
        (a for a, _ in merged.associations), (a for a, _ in merged.aliases)
    )
    assert verdict.contribution.concept_aliases == (("SN-SEN70センサー", "SN-SEN70"),)


def test_a_label_alias_counts_one_more_use_of_its_canonical() -> None:
    base = Contribution.of_associations([Association("a", "uses", "b")])
    both = base.with_aliases([Alias("employs", "uses", "label")])
    assert [(use.label, use.count) for use in both.labels] == [("uses", 2)]
    assert both == Contribution.of(
        [Association("a", "uses", "b")], [Alias("employs", "uses", "label")]
    )
